import Foundation
import Logging
import TestSupport
import Testing
import VirtualDevice

#if canImport(Glibc)
    import Glibc
#endif

extension FidelitySuite {
    /// The twins as an attack surface (issue 25 item 2), driven by pymobiledevice3 as a hostile
    /// client would drive them: no AFC path or link leads out of a service root, only the host the
    /// twin trusts pairs or gets a session, and another local user reaches neither the TCP usbmuxd
    /// nor a network twin.
    @Suite("twin confinement: AFC roots, pairing, other users", .serialized)
    struct TwinConfinementTests {
        static var python: String {
            FidelityTwin.repositoryRoot.appendingPathComponent(".venv-pmd3/bin/python").path
        }

        /// Runs the probe script (pymobiledevice3's API) and returns its JSON: step → {ok, value|error}.
        static func probe(
            _ twin: FidelityTwin, _ arguments: [String], environment: [String: String] = [:],
            asUser uid: Int? = nil
        ) async throws -> (steps: [String: [String: Any]], result: ClientProcess.Result) {
            let script = twin.directory.appendingPathComponent("twin_probe.py")
            if !FileManager.default.fileExists(atPath: script.path) {
                try Data(Self.script.utf8).write(to: script)
            }
            let process: ClientProcess
            let variables = ["NO_COLOR": "1", "TERM": "dumb"].merging(environment) { $1 }
            if let uid {
                process = try ClientProcess(
                    "/usr/bin/setpriv",
                    ["--reuid=\(uid)", "--regid=\(uid)", "--clear-groups", python, script.path] + arguments,
                    environment: variables, directory: twin.directory)
            } else {
                process = try ClientProcess(
                    python, [script.path] + arguments, environment: variables, directory: twin.directory)
            }
            let result = await process.finish(deadline: 120)
            let line = result.stdout.split(separator: "\n").last.map(String.init) ?? ""
            let steps =
                (try? JSONSerialization.jsonObject(with: Data(line.utf8))) as? [String: [String: Any]] ?? [:]
            return (steps, result)
        }

        static func text(_ step: [String: Any]?) -> String {
            "\(step?["value"] ?? step?["error"] ?? "(step missing)")"
        }

        static func succeeded(_ step: [String: Any]?) -> Bool { step?["ok"] as? Bool == true }
        static func failed(_ step: [String: Any]?) -> Bool { step?["ok"] as? Bool == false }

        @Test("AFC and crashreportcopymobile: no path or link leaves the root; normal use still works")
        func afcStaysInItsRoot() async throws {
            let profile = VirtualDeviceProfile.preset(productType: "iPad5,1", iOSVersion: "15.8")!
            let twin = try await FidelityTwin.start(profile, behaviour: ProbeBehaviour())
            do {
                try await checkAFC(twin, profile)
            } catch {
                await twin.stop()
                throw error
            }
            await twin.stop()
        }

        func checkAFC(_ twin: FidelityTwin, _ profile: VirtualDeviceProfile) async throws {
            // A host file outside every root, and links planted in the media folder behind the
            // service's back (absolute to the host's /, relative far up).
            let secretFolder = twin.directory.appendingPathComponent("secret")
            try FileManager.default.createDirectory(at: secretFolder, withIntermediateDirectories: true)
            let secret = secretFolder.appendingPathComponent("secret.txt")
            let secretText = "SECRET-\(UUID().uuidString)"
            try Data(secretText.utf8).write(to: secret)
            let media = twin.directory.appendingPathComponent("devices/\(profile.name)/Media")
            try FileManager.default.createSymbolicLink(
                atPath: media.appendingPathComponent("Downloads/planted-absolute").path,
                withDestinationPath: "/")
            try FileManager.default.createSymbolicLink(
                atPath: media.appendingPathComponent("Downloads/planted-relative").path,
                withDestinationPath: Array(repeating: "..", count: 12).joined(separator: "/"))

            for service in ["com.apple.afc", "com.apple.crashreportcopymobile"] {
                let (steps, result) = try await Self.probe(
                    twin, ["afc", twin.udid, secret.path, secretFolder.path, service],
                    environment: ["USBMUXD_SOCKET_ADDRESS": String(twin.socket.dropFirst(5))])
                #expect(!steps.isEmpty, "\(result)")
                #expect(!result.output.contains(secretText), "\(service) gave the host file away: \(result)")
                for refused in [
                    "link relative escape", "read through relative escape", "write through relative escape",
                    "hard link escape", "read hard link", "read host file through /",
                    "read absolute host file link", "write through absolute link", "read dotdot path",
                    "list dotdot path", "stat dotdot path", "read planted absolute link",
                    "read planted relative link", "list planted relative link", "rename link up",
                    "rename folder up", "read link up", "read folder up",
                ] {
                    #expect(
                        Self.failed(steps[refused]), "\(service): \(refused): \(Self.text(steps[refused]))")
                }
                for allowed in [
                    "link to /", "read inside through /", "link inside", "read link inside", "link deep",
                    "read deep link",
                    "remove deep link", "rename folder",
                    "read moved link", "stat moved link", "push", "pull", "list", "rename", "read renamed",
                    "remove file", "remove link", "inside still there", "remove tree", "tree gone",
                ] {
                    #expect(
                        Self.succeeded(steps[allowed]), "\(service): \(allowed): \(Self.text(steps[allowed]))"
                    )
                }
                for read in [
                    "read inside through /", "read link inside", "read deep link", "read moved link",
                    "inside still there",
                ] {
                    #expect(Self.text(steps[read]) == "inside the root\n", "\(service): \(read)")
                }
                #expect(Self.text(steps["pull"]) == "pushed\n")
                #expect(!Self.text(steps["tree gone"]).contains("probe"), "\(Self.text(steps["tree gone"]))")
                // A relative target is shown as made; an absolute one from the service root.
                #expect(Self.text(steps["stat moved link"]).contains("'LinkTarget': '../../inside.txt'"))
            }
            // An app whose CFBundleIdentifier is a path: installd names folders after it.
            let victim = twin.directory.appendingPathComponent("victim")
            try FileManager.default.createDirectory(at: victim, withIntermediateDirectories: true)
            try Data("keep".utf8).write(to: victim.appendingPathComponent("keep.txt"))
            let ipa = try twin.makeIPA(bundleID: "../../../victim")
            let install = try await twin.pmd3(["apps", "install", ipa.path])
            #expect(!install.succeeded && install.output.contains("invalid CFBundleIdentifier"), "\(install)")
            #expect(
                FileManager.default.fileExists(atPath: victim.appendingPathComponent("keep.txt").path),
                "installing removed a folder outside the twin: \(install)")
            #expect(try String(contentsOf: secret, encoding: .utf8) == secretText)
            #expect(try FileManager.default.contentsOfDirectory(atPath: secretFolder.path) == ["secret.txt"])
        }

        @Test("pairing only for the trusted host: never over Wi-Fi, a stranger denied over USB")
        func pairingOnlyForTheTrustedHost() async throws {
            var profile = VirtualDeviceProfile.preset(productType: "iPad5,1", iOSVersion: "15.8")!
            profile.connection = .usbAndNetwork
            let twin = try await FidelityTwin.start(profile, behaviour: ProbeBehaviour())
            do {
                try await checkPairing(twin, profile)
            } catch {
                await twin.stop()
                throw error
            }
            await twin.stop()
        }

        func checkPairing(_ twin: FidelityTwin, _ profile: VirtualDeviceProfile) async throws {
            let host = try #require(try await twin.daemon.networkAddress(udid: twin.udid))
            let usbmuxd = String(twin.socket.dropFirst(5))
            let state = twin.directory.appendingPathComponent("devices/\(profile.name)/state.json")
            func trustedHosts() throws -> Int {
                let json = try JSONSerialization.jsonObject(with: Data(contentsOf: state)) as? [String: Any]
                return (json?["trustedHosts"] as? [Any])?.count ?? -1
            }
            #expect(try trustedHosts() == 1)

            // A client with no pair record at the Wi-Fi twin's lockdownd: pymobiledevice3 pairs first.
            let home = twin.directory.appendingPathComponent("stranger")
            try FileManager.default.createDirectory(at: home, withIntermediateDirectories: true)
            let stranger = try await Self.probe(
                twin, ["network-pair", host, home.path, "/etc/hostname"],
                environment: ["HOME": home.path, "USBMUXD_SOCKET_ADDRESS": "/nonexistent/usbmuxd"])
            #expect(Self.failed(stranger.steps["pair and use AFC"]), "\(stranger.result)")
            #expect(
                Self.text(stranger.steps["pair and use AFC"]).contains("PairingProhibitedOverThisConnection"),
                "\(stranger.result)")
            // The same with a bare Pair request (a made-up HostID, no certificates), then a session.
            let raw = try await Self.probe(twin, ["raw-pair", host])
            #expect(
                Self.text(raw.steps["pair"]).contains("PairingProhibitedOverThisConnection"), "\(raw.result)")
            #expect(!Self.text(raw.steps["pair"]).contains("EscrowBag"), "\(raw.result)")
            #expect(Self.text(raw.steps["start session"]).contains("InvalidHostID"), "\(raw.result)")
            #expect(!Self.text(raw.steps["start session"]).contains("SessionID"), "\(raw.result)")
            #expect(try trustedHosts() == 1, "a stranger became a trusted host")

            // The record hadeploy uses (the virtual usbmuxd's) works over the network as before.
            let trusted = try await Self.probe(
                twin, ["trusted-network", host, twin.udid], environment: ["USBMUXD_SOCKET_ADDRESS": usbmuxd])
            #expect(Self.succeeded(trusted.steps["trusted network AFC"]), "\(trusted.result)")
            let info = try await twin.debian("ideviceinfo", ["-n", "-k", "DeviceName"])
            #expect(info.succeeded && info.stdout == profile.deviceName + "\n", "\(info)")

            // Over USB a host the twin does not know is denied, as a user taps "Don't Trust"…
            let usb = ["USBMUXD_SOCKET_ADDRESS": usbmuxd, "HOME": home.path]
            let strangerID = UUID().uuidString
            let denied = try await Self.probe(twin, ["usb-pair", twin.udid, strangerID], environment: usb)
            #expect(
                Self.text(denied.steps["pair over usb"]).contains("UserDeniedPairing"), "\(denied.result)")
            #expect(try trustedHosts() == 1)
            // …unless the user is there to trust it; then its record is the one the Debian tools use.
            let control = twin.directory.appendingPathComponent("control.sock").path
            let tapped = try await Self.probe(
                twin, ["control", control, #"{"command":"acceptNextPairing","udid":"\#(twin.udid)"}"#])
            #expect(Self.text(tapped.steps["control"]).contains(#""ok":true"#), "\(tapped.result)")
            let accepted = try await Self.probe(twin, ["usb-pair", twin.udid, strangerID], environment: usb)
            #expect(Self.succeeded(accepted.steps["pair over usb"]), "\(accepted.result)")
            let validate = try await twin.debian("idevicepair", ["validate"])
            #expect(validate.succeeded && validate.stdout.contains("SUCCESS"), "\(validate)")

            // When the run ends the network twin stops listening.
            let before = try await Self.probe(twin, ["query", host])
            #expect(Self.text(before.steps["query type"]) == "com.apple.mobile.lockdown", "\(before.result)")
            await twin.daemon.stop()
            let after = try await Self.probe(twin, ["query", host])
            #expect(Self.failed(after.steps["query type"]), "\(after.result)")
        }

        @Test("another local user reaches neither the TCP usbmuxd nor a network twin")
        func otherUsersAreShutOut() async throws {
            try FidelityTwin.provisionClients()
            let directory = URL(fileURLWithPath: "/tmp/pmd3-\(UUID().uuidString.prefix(8))")
            try FileManager.default.createDirectory(at: directory, withIntermediateDirectories: true)
            defer { try? FileManager.default.removeItem(at: directory) }
            var profile = VirtualDeviceProfile.preset(productType: "iPad5,1", iOSVersion: "15.8")!
            profile.connection = .usbAndNetwork
            let daemon = try VirtualUsbmuxd(
                profiles: [profile], stateDirectory: directory, address: .tcp(port: 0),
                logger: Logger(label: "pmd3-confinement", factory: { _ in SwiftLogNoOpLogHandler() }),
                fileSystem: TestHost.fileSystem)
            let address = try await daemon.start()
            let udid = await daemon.devices().first!.udid
            let twin = FidelityTwin(
                directory: directory, daemon: daemon, socket: address, udid: udid, profile: profile)
            let host = try #require(try await daemon.networkAddress(udid: udid))
            #expect(address.hasPrefix("127.0.0.1:"), "the TCP usbmuxd listens on the loopback only")
            let home = directory.appendingPathComponent("nobody")
            try FileManager.default.createDirectory(
                at: home, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o777])
            let environment = ["USBMUXD_SOCKET_ADDRESS": address, "HOME": home.path]

            // The user running the twins gets through (so the refusals below are about the user).
            let own = try await Self.probe(twin, ["usbmux-list"], environment: environment)
            #expect(Self.text(own.steps["list devices"]).contains(udid), "\(own.result)")
            let ownQuery = try await Self.probe(twin, ["query", host], environment: environment)
            #expect(
                Self.text(ownQuery.steps["query type"]) == "com.apple.mobile.lockdown", "\(ownQuery.result)")

            // nobody (uid 65534) is shut out of both before a byte is read.
            let listed = try await Self.probe(twin, ["usbmux-list"], environment: environment, asUser: 65534)
            #expect(!listed.steps.isEmpty, "the probe did not run as nobody: \(listed.result)")
            #expect(Self.failed(listed.steps["list devices"]), "\(listed.result)")
            #expect(!listed.result.output.contains(udid), "\(listed.result)")
            let query = try await Self.probe(twin, ["query", host], environment: environment, asUser: 65534)
            #expect(Self.failed(query.steps["query type"]), "\(query.result)")
            await daemon.stop()

            // The UNIX sockets (usbmuxd, control) are the owner's alone, whatever the umask says: the
            // twins as users start them (`hadeploy virtual`), in a process of their own whose umask
            // is 0 (never this test process's, which other tests share).
            let project = directory.appendingPathComponent("project")
            let folder = project.appendingPathComponent("unix")
            let socket = folder.appendingPathComponent("usbmuxd.sock").path
            // As `hadeploy virtual` makes its state folder: open to others to look into.
            try FileManager.default.createDirectory(
                at: folder, withIntermediateDirectories: true, attributes: [.posixPermissions: 0o755])
            try Self.oneTwin.write(
                to: project.appendingPathComponent("devices.yaml"), atomically: true, encoding: .utf8)
            let binary = try await HADeployBinary.path
            let twins = try BackgroundCommand(
                "/bin/sh",
                [
                    "-c", #"umask 0 && exec "$0" "$@""#, binary, "virtual", "--socket", socket, "--state",
                    folder.path,
                ], in: project, environment: [:])
            defer { twins.stop() }
            let started = try await twins.line(startingWith: "USBMUXD_SOCKET_ADDRESS=", within: 60)
            try #require(started != nil, "hadeploy virtual did not start: \(twins.output)")
            for path in [socket, folder.appendingPathComponent("control.sock").path] {
                let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
                #expect(mode == 0o600, "\(path): \(String(mode ?? 0, radix: 8))")
            }
            let unixEnvironment = ["USBMUXD_SOCKET_ADDRESS": socket, "HOME": home.path]
            let ownUnix = try await Self.probe(twin, ["usbmux-list"], environment: unixEnvironment)
            #expect(
                ownUnix.steps["list devices"]?["ok"] as? Bool == true, "the owner lists: \(ownUnix.result)")
            let viaUnix = try await Self.probe(
                twin, ["usbmux-list"], environment: unixEnvironment, asUser: 65534)
            #expect(Self.failed(viaUnix.steps["list devices"]), "\(viaUnix.result)")
        }

        /// One USB twin for `hadeploy virtual` (the shape of the bench's matrix).
        static let oneTwin = """
            version: 1
            flavours:
              modern: {archs: [arm64], deployment_target: "15.0", sdk: iphoneos}
            devices:
              d1:
                name: d1
                product_type: iPad5,1
                ios: "15.8"
                arch: arm64
                flavour: modern
                transport: usb

            """

        /// The hostile client: pymobiledevice3's own API, step by step (each step's outcome is kept).
        static let script = #"""
            import asyncio, json, sys, uuid
            from pathlib import Path

            from pymobiledevice3 import usbmux
            from pymobiledevice3.lockdown import create_using_tcp, create_using_usbmux
            from pymobiledevice3.service_connection import ServiceConnection
            from pymobiledevice3.services.afc import AfcLinkType, AfcService

            results = {}


            def shown(value):
                if isinstance(value, bytes):
                    return value.decode("utf-8", "replace")
                if isinstance(value, (str, int, bool, list)) or value is None:
                    return value
                return str(value)


            async def attempt(name, make):
                try:
                    results[name] = {"ok": True, "value": shown(await make())}
                except Exception as error:
                    results[name] = {"ok": False, "error": f"{type(error).__name__}: {error}"}


            async def read(afc, path):
                handle = await afc.fopen(path, "r")
                try:
                    return await afc.fread(handle, 65536)
                finally:
                    await afc.fclose(handle)


            async def write(afc, path, data):
                handle = await afc.fopen(path, "w")
                try:
                    await afc.fwrite(handle, data)
                finally:
                    await afc.fclose(handle)


            async def afc_probe(afc, host_file, secret_dir):
                # Everything a client may try to leave the service root, then normal use.
                await afc.makedirs("/Downloads/probe/a/b")
                await write(afc, "/Downloads/probe/inside.txt", b"inside the root\n")
                # Links that leave the root: relative, hard, and through the parent of the root.
                await attempt("link relative escape", lambda: afc.link("../../../../../../../../../../..", "/Downloads/probe/up"))
                await attempt("read through relative escape", lambda: read(afc, "/Downloads/probe/up" + host_file))
                await attempt("write through relative escape", lambda: write(afc, "/Downloads/probe/up" + secret_dir + "/planted.txt", b"x"))
                await attempt("hard link escape", lambda: afc.link("../../../../../../../../../.." + host_file, "/Downloads/probe/hard", AfcLinkType.HARDLINK))
                await attempt("read hard link", lambda: read(afc, "/Downloads/probe/hard"))
                # Absolute targets name paths from the service root.
                await attempt("link to /", lambda: afc.link("/", "/Downloads/probe/root"))
                await attempt("read host file through /", lambda: read(afc, "/Downloads/probe/root" + host_file))
                await attempt("read inside through /", lambda: read(afc, "/Downloads/probe/root/Downloads/probe/inside.txt"))
                await attempt("link to absolute host file", lambda: afc.link(host_file, "/Downloads/probe/abs"))
                await attempt("read absolute host file link", lambda: read(afc, "/Downloads/probe/abs"))
                await attempt("write through absolute link", lambda: write(afc, "/Downloads/probe/root" + secret_dir + "/planted.txt", b"x"))
                # Plain `..`.
                await attempt("read dotdot path", lambda: read(afc, "/../../../../../../../../.." + host_file))
                await attempt("list dotdot path", lambda: afc.listdir("/Downloads/../.."))
                await attempt("stat dotdot path", lambda: afc.stat("../../../../../../../../.." + host_file))
                # Links planted in the folder by something else (one absolute, one relative).
                await attempt("read planted absolute link", lambda: read(afc, "/Downloads/planted-absolute" + host_file))
                await attempt("read planted relative link", lambda: read(afc, "/Downloads/planted-relative" + host_file))
                await attempt("list planted relative link", lambda: afc.listdir("/Downloads/planted-relative"))
                # A relative link made inside, then moved (alone, or in its folder) where it would lead out.
                await attempt("link inside", lambda: afc.link("../../inside.txt", "/Downloads/probe/a/b/rel"))
                await attempt("read link inside", lambda: read(afc, "/Downloads/probe/a/b/rel"))
                await attempt("link deep", lambda: afc.link("../../../../Downloads/probe/inside.txt", "/Downloads/probe/a/b/deep"))
                await attempt("read deep link", lambda: read(afc, "/Downloads/probe/a/b/deep"))
                await attempt("rename link up", lambda: afc.rename("/Downloads/probe/a/b/deep", "/moved-deep"))
                await attempt("rename folder up", lambda: afc.rename("/Downloads/probe/a", "/moved-folder"))
                await attempt("read link up", lambda: read(afc, "/moved-deep"))
                await attempt("read folder up", lambda: read(afc, "/moved-folder/b/deep"))
                await attempt("remove deep link", lambda: afc.rm_single("/Downloads/probe/a/b/deep"))
                # Moved with its folder to the same depth it still names the same file, as on a device.
                await attempt("rename folder", lambda: afc.rename("/Downloads/probe/a/b", "/Downloads/probe/a/c"))
                await attempt("read moved link", lambda: read(afc, "/Downloads/probe/a/c/rel"))
                await attempt("stat moved link", lambda: afc.stat("/Downloads/probe/a/c/rel"))
                # Normal use.
                await attempt("push", lambda: afc.set_file_contents("/Downloads/probe/pushed.txt", b"pushed\n"))
                await attempt("pull", lambda: afc.get_file_contents("/Downloads/probe/pushed.txt"))
                await attempt("list", lambda: afc.listdir("/Downloads/probe"))
                await attempt("rename", lambda: afc.rename("/Downloads/probe/pushed.txt", "/Downloads/probe/a/renamed.txt"))
                await attempt("read renamed", lambda: read(afc, "/Downloads/probe/a/renamed.txt"))
                await attempt("remove file", lambda: afc.rm_single("/Downloads/probe/a/renamed.txt"))
                await attempt("remove link", lambda: afc.rm_single("/Downloads/probe/a/c/rel"))
                await attempt("inside still there", lambda: read(afc, "/Downloads/probe/inside.txt"))
                await attempt("remove tree", lambda: afc.rm("/Downloads/probe", force=True))
                await attempt("tree gone", lambda: afc.listdir("/Downloads"))


            async def main():
                command = sys.argv[1]
                if command == "afc":
                    udid, host_file, secret_dir = sys.argv[2:5]
                    service = sys.argv[5] if len(sys.argv) > 5 else None
                    lockdown = await create_using_usbmux(serial=udid, autopair=False)
                    async with AfcService(lockdown, service_name=service) as afc:
                        await afc_probe(afc, host_file, secret_dir)
                elif command == "network-pair":
                    # A client with no pair record: pairs (if the twin lets it) and reads through AFC.
                    host, folder, host_file = sys.argv[2:5]

                    async def pair_and_read():
                        lockdown = await create_using_tcp(hostname=host, pairing_records_cache_folder=Path(folder), autopair=True)
                        async with AfcService(lockdown) as afc:
                            return await afc.listdir("/")

                    await attempt("pair and use AFC", pair_and_read)
                elif command == "raw-pair":
                    # A Pair request with a made-up HostID and no certificates, then a session with it.
                    host = sys.argv[2]
                    host_id = "00000000-0000-4000-8000-00000000BEEF"

                    async def request(message):
                        service = await ServiceConnection.create_using_tcp(host, 62078)
                        try:
                            return await service.send_recv_plist({"Label": "probe", "ProtocolVersion": "2", **message})
                        finally:
                            await service.close()

                    await attempt("pair", lambda: request({"Request": "Pair", "PairRecord": {"HostID": host_id, "SystemBUID": host_id}}))
                    await attempt("start session", lambda: request({"Request": "StartSession", "HostID": host_id, "SystemBUID": host_id}))
                elif command == "trusted-network":
                    # The pair record hadeploy uses (from the virtual usbmuxd), over the network.
                    host, udid = sys.argv[2:4]

                    async def use():
                        async with await usbmux.create_mux() as mux:
                            record = await mux.get_pair_record(udid)
                        lockdown = await create_using_tcp(hostname=host, pair_record=record, autopair=False)
                        async with AfcService(lockdown) as afc:
                            return await afc.listdir("/")

                    await attempt("trusted network AFC", use)
                elif command == "usb-pair":
                    # A host of its own (pymobiledevice3 would reuse the HostID of usbmuxd's record).
                    udid, host_id = sys.argv[2:4]

                    async def pair():
                        lockdown = await create_using_usbmux(serial=udid, autopair=False)
                        lockdown.host_id = host_id
                        await lockdown.pair(timeout=0)
                        return "paired"

                    await attempt("pair over usb", pair)
                elif command == "usbmux-list":
                    async def listed():
                        return [device.serial for device in await usbmux.list_devices()]

                    await attempt("list devices", listed)
                elif command == "control":
                    # One JSON line to the twins' control socket, one reply line back.
                    path, line = sys.argv[2:4]

                    async def control():
                        reader, writer = await asyncio.open_unix_connection(path)
                        writer.write(line.encode() + b"\n")
                        await writer.drain()
                        reply = await reader.readline()
                        writer.close()
                        return reply.decode().strip()

                    await attempt("control", control)
                elif command == "query":
                    host = sys.argv[2]

                    async def query():
                        service = await ServiceConnection.create_using_tcp(host, 62078)
                        try:
                            return (await service.send_recv_plist({"Request": "QueryType"})).get("Type")
                        finally:
                            await service.close()

                    await attempt("query type", query)
                print(json.dumps(results))


            asyncio.run(main())
            """#
    }
}
