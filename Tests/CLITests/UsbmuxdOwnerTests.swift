import Foundation
import HADeployCore
import TestSupport
import Testing

#if canImport(Glibc)
    import Glibc
#endif

/// A UNIX socket that counts the connections it accepts and the bytes sent to it: a usbmuxd someone
/// else could have planted, to see whether hadeploy ever spoke to it.
final class PlantedSocket: @unchecked Sendable {
    let path: String
    private let listener: Int32
    private let lock = NSLock()
    private var connections = 0
    private var bytes = 0

    init(at path: String) throws {
        self.path = path
        listener = socket(AF_UNIX, TestPlatform.streamSocket, 0)
        guard OwnerOnlySocket.bind(listener, at: path) == 0, chmod(path, 0o666) == 0,
            listen(listener, 16) == 0
        else { throw CocoaError(.fileWriteUnknown) }
        let thread = Thread { [self, listener] in
            while true {
                let client = accept(listener, nil, nil)
                if client < 0 { return }
                var buffer = [UInt8](repeating: 0, count: 4096)
                let got = recv(client, &buffer, buffer.count, 0)
                lock.withLock {
                    connections += 1
                    bytes += max(got, 0)
                }
                close(client)
            }
        }
        thread.start()
    }

    var received: (connections: Int, bytes: Int) { lock.withLock { (connections, bytes) } }

    func stop() {
        shutdown(listener, Int32(SHUT_RDWR))
        close(listener)
        unlink(path)
    }
}

/// Whoever serves a usbmuxd socket receives the deploy (the app, the pair record, the token), so a
/// socket another local user could have made is never used: `devices`, a deploy and the muxer refuse
/// it, say why, and send it nothing.
@Suite struct UsbmuxdOwnerTests {
    /// A folder of `mode` (set after creation: the umask does not narrow it).
    static func folder(_ mode: mode_t) throws -> URL {
        let folder = FileManager.default.temporaryDirectory.appendingPathComponent(
            "hadeploy-mux-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: folder, withIntermediateDirectories: false)
        guard chmod(folder.path, mode) == 0 else { throw CocoaError(.fileWriteNoPermission) }
        return folder
    }

    @Test(arguments: [
        (mode_t(0o777), "can be changed by other users (mode 777)"),
        (mode_t(0o1777), "can be changed by other users (mode 1777)"),
    ])
    func aSocketInAFolderOthersCanChangeIsRefusedAndSentNothing(mode: mode_t, says: String) async throws {
        let project = try await Project(commits: 1, tag: "v1.0.0")
        let folder = try Self.folder(mode)
        defer { try? FileManager.default.removeItem(at: folder) }
        let planted = try PlantedSocket(at: folder.appendingPathComponent("usbmuxd").path)
        defer { planted.stop() }
        let address = "UNIX:\(planted.path)"

        let devices = try await HADeployBinary.run(
            ["devices"], in: project.url, environment: ["USBMUXD_SOCKET_ADDRESS": address])
        #expect(devices.status == 1, "\(devices.stdout)\(devices.stderr)")
        #expect(devices.stderr.contains("refusing the usbmuxd at \(address)"), "\(devices.stderr)")
        #expect(devices.stderr.contains(says), "\(devices.stderr)")
        #expect(devices.stderr.contains("XDG_RUNTIME_DIR"), "the next step names a per-user folder")

        let app = try BrokenUsbmuxdTests.tinyApp(in: project.url)
        let deploy = try await HADeployBinary.run(
            ["mini4", "--no-build", "--artifact", app.path, "--no-verify"], in: project.url,
            environment: [
                "USBMUXD_SOCKET_ADDRESS": address, "IPAD_MINI4_UDID": "00008030-000000000000002E",
                "HA_SERVER": "http://127.0.0.1:1",
            ],
            secrets: ["HA_TOKEN": "planted-socket-token"], timeout: .seconds(120))
        #expect(deploy.status == 1, "\(deploy.stdout)\(deploy.stderr)")
        #expect(
            (deploy.stdout + deploy.stderr).contains("refusing the usbmuxd at \(address)"),
            "\(deploy.stdout)\(deploy.stderr)")

        let muxer = try await HADeployBinary.run(
            ["muxer", "--socket", project.url.appendingPathComponent("m.sock").path, "--usbmuxd", address],
            in: project.url, timeout: .seconds(30))
        #expect(muxer.status != 0, "\(muxer.stdout)\(muxer.stderr)")
        #expect(muxer.stderr.contains(says), "\(muxer.stderr)")
        #expect(planted.received.connections == 0, "the planted socket was spoken to: \(planted.received)")
    }

    @Test func aLinkToTheSocketIsRefused() async throws {
        let project = try await Project(commits: 1, tag: "v1.0.0")
        let folder = try Self.folder(0o700)
        defer { try? FileManager.default.removeItem(at: folder) }
        let planted = try PlantedSocket(at: folder.appendingPathComponent("real").path)
        defer { planted.stop() }
        let link = folder.appendingPathComponent("usbmuxd").path
        #expect(symlink(planted.path, link) == 0)
        let devices = try await HADeployBinary.run(
            ["devices"], in: project.url, environment: ["USBMUXD_SOCKET_ADDRESS": "UNIX:" + link])
        #expect(devices.status == 1, "\(devices.stdout)\(devices.stderr)")
        #expect(devices.stderr.contains("is not a socket (a symbolic link)"), "\(devices.stderr)")
        #expect(planted.received.connections == 0)
    }

    /// The muxer will not serve where its clients would refuse to connect (the shared /tmp).
    @Test func theMuxerRefusesToServeInASharedFolder() async throws {
        let project = try await Project(commits: 1, tag: "v1.0.0")
        let folder = try Self.folder(0o1777)
        defer { try? FileManager.default.removeItem(at: folder) }
        let muxer = try await HADeployBinary.run(
            [
                "muxer", "--socket", folder.appendingPathComponent("hadeploy-usbmuxd").path, "--usbmuxd",
                "UNIX:/nonexistent/usbmuxd.sock",
            ], in: project.url, timeout: .seconds(30))
        #expect(muxer.status != 0, "\(muxer.stdout)\(muxer.stderr)")
        #expect(muxer.stderr.contains("in a folder clients refuse"), "\(muxer.stderr)")
        #expect(
            !FileManager.default.fileExists(atPath: folder.appendingPathComponent("hadeploy-usbmuxd").path))
    }
}

/// The attack as another local account makes it (root runs these: becoming `nobody` takes root;
/// `make test-root`). nobody takes the well-known name first and serves a usbmuxd there; root's
/// hadeploy refuses it by its owner. And a socket file that looks root's, in root's own folder, but
/// that nobody's process serves, is refused by who serves it.
@Suite struct AnotherUsersUsbmuxdTests {
    static let nobody: uid_t = 65_534

    /// `nobody` binds a usbmuxd socket at `path` and reports every connection and request.
    static func serveAsNobody(_ path: String, in directory: URL) async throws -> BackgroundCommand {
        let script = """
            import os, socket, sys
            server = socket.socket(socket.AF_UNIX); server.bind(sys.argv[1]); os.chmod(sys.argv[1], 0o666)
            server.listen(8); print("ready", flush=True)
            while True:
                c = server.accept()[0]; c.settimeout(2)
                try: print("request" if c.recv(4096) else "connected", flush=True)
                except Exception: print("connected", flush=True)
                c.close()
            """
        let process = try BackgroundCommand(
            "/usr/bin/setpriv",
            [
                "--reuid=\(nobody)", "--regid=\(nobody)", "--clear-groups", "/usr/bin/python3", "-c", script,
                path,
            ],
            in: directory, environment: [:])
        #expect(try await process.line(startingWith: "ready", within: 30) != nil, "\(process.output)")
        return process
    }

    @Test func anotherUsersUsbmuxdIsRefusedByItsOwnerAndGetsNothing() async throws {
        try #require(
            geteuid() == 0, "becoming another local account takes root: run it through make test-root")
        let project = try await Project(commits: 1, tag: "v1.0.0")
        // The attacker's own folder in the shared /tmp (it may make one), and its socket there.
        let theirs = URL(fileURLWithPath: "/tmp/hadeploy-usbmuxd-\(UUID().uuidString.prefix(8))")
        try FileManager.default.createDirectory(at: theirs, withIntermediateDirectories: false)
        #expect(chown(theirs.path, Self.nobody, Self.nobody) == 0 && chmod(theirs.path, 0o755) == 0)
        defer { try? FileManager.default.removeItem(at: theirs) }
        let path = theirs.appendingPathComponent("usbmuxd").path
        let attacker = try await Self.serveAsNobody(path, in: project.url)
        defer { attacker.stop() }

        let devices = try await HADeployBinary.run(
            ["devices"], in: project.url, environment: ["USBMUXD_SOCKET_ADDRESS": "UNIX:" + path])
        #expect(devices.status == 1, "\(devices.stdout)\(devices.stderr)")
        #expect(devices.stderr.contains("belongs to another user (uid 65534, nobody)"), "\(devices.stderr)")
        let muxer = try await HADeployBinary.run(
            ["muxer", "--socket", path], in: project.url, timeout: .seconds(30))
        #expect(muxer.status != 0, "\(muxer.stdout)\(muxer.stderr)")
        #expect(muxer.stderr.contains("(uid 65534, nobody)"), "the refusal names the owner: \(muxer.stderr)")

        // The socket moved into root's own folder and made root's: its server is still nobody's.
        let ours = project.url.appendingPathComponent("run")
        try FileManager.default.createDirectory(
            at: ours, withIntermediateDirectories: false, attributes: [.posixPermissions: 0o700])
        let moved = ours.appendingPathComponent("usbmuxd").path
        #expect(rename(path, moved) == 0 && chown(moved, 0, 0) == 0)
        let served = try await HADeployBinary.run(
            ["devices"], in: project.url, environment: ["USBMUXD_SOCKET_ADDRESS": "UNIX:" + moved])
        #expect(served.status == 1, "\(served.stdout)\(served.stderr)")
        #expect(
            served.stderr.contains("is served by another user's process (uid 65534, nobody)"),
            "\(served.stderr)")
        #expect(!attacker.output.contains("request"), "nobody's usbmuxd got a request: \(attacker.output)")
    }
}
