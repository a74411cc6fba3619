import Foundation
import Testing
import VirtualDevice

extension FidelitySuite {
    /// pymobiledevice3 11.45, an implementation of the device protocols independent of
    /// libimobiledevice, run command by command against the twins; after the commands that change
    /// the device, the Debian tools are asked the same question and must agree.
    @Suite("pymobiledevice3 against the virtual devices", .serialized)
    struct PyMobileDevice3Tests {
        @Test("every listed command on the iOS 15.8 twin (iPad mini 4)")
        func iOS15() async throws {
            try await runCommands(
                on: VirtualDeviceProfile.preset(productType: "iPad5,1", iOSVersion: "15.8")!)
        }

        @Test("every listed command on the iOS 9.3.5 twin (iPad 2)")
        func iOS9() async throws {
            try await runCommands(
                on: VirtualDeviceProfile.preset(productType: "iPad2,1", iOSVersion: "9.3.5")!)
        }

        /// One device's story, command after command, in the order a user would run them.
        func runCommands(on profile: VirtualDeviceProfile) async throws {
            let twin = try await FidelityTwin.start(profile, behaviour: ProbeBehaviour())
            // Stopped here, not in a deferred task: the process may end before such a task runs,
            // leaving the twin's directory behind.
            do {
                try await exercise(twin, profile)
            } catch {
                await twin.stop()
                throw error
            }
            await twin.stop()
        }

        func exercise(_ twin: FidelityTwin, _ profile: VirtualDeviceProfile) async throws {
            let score = FidelityScore("iOS \(profile.productVersion)")
            defer { print(score.summary) }
            let version = profile.productVersion
            let udid = twin.udid
            let bundleID = "io.hadeploy.fidelity"
            let modern = profile.majorVersion >= 14

            func check(_ client: String, _ name: String, _ result: ClientProcess.Result, _ passed: Bool) {
                #expect(score.record(client, name, passed), "\(result)")
            }
            func ran(_ result: ClientProcess.Result) -> Bool {
                result.succeeded && !result.output.contains("Traceback") && !result.output.contains(" ERROR ")
            }

            // lockdown
            let info = try await twin.pmd3(["lockdown", "info"])
            check(
                "pymobiledevice3", "lockdown info", info,
                ran(info) && info.stdout.contains("\"ProductVersion\": \"\(version)\"")
                    && info.stdout.contains("\"UniqueDeviceID\": \"\(udid)\""))
            let date = try await twin.pmd3(["lockdown", "date"])
            check("pymobiledevice3", "lockdown date", date, ran(date) && Self.isNow(date.stdout))
            let pair = try await twin.pmd3(["lockdown", "pair"])
            check("pymobiledevice3", "lockdown pair", pair, ran(pair))
            // The pair record pymobiledevice3 saved through usbmuxd is the one libimobiledevice uses.
            let validate = try await twin.debian("idevicepair", ["validate"])
            check(
                "debian", "idevicepair validate", validate,
                validate.succeeded && validate.stdout.contains("SUCCESS"))
            // Runs until stopped. The device's first Marco arrives at once (pymobiledevice3 logs it
            // at -vv); the Polo it answers is accepted when the connection is still up a second later
            // (the twin closes at once on any other reply). No error is what a real device gives.
            let heartbeat = try twin.startPMD3(["-vv", "lockdown", "heartbeat"])
            let marco = await heartbeat.wait(until: { $0.contains("'Command': 'Marco'") }, deadline: 20)
            if marco { try await Task.sleep(for: .seconds(1)) }
            let beat = await heartbeat.stop(when: { _ in false }, deadline: 0)
            check(
                "pymobiledevice3", "lockdown heartbeat", beat,
                marco && beat.status == 9 && !beat.output.contains("Traceback")
                    && !beat.output.contains("ERROR"))

            // installation_proxy
            let ipa = try twin.makeIPA(bundleID: bundleID)
            let install = try await twin.pmd3(["apps", "install", ipa.path], deadline: 120)
            check("pymobiledevice3", "apps install", install, ran(install))
            let list = try await twin.pmd3(["apps", "list"])
            let systemApps = list.stdout.components(separatedBy: "\"ApplicationType\": \"System\"").count - 1
            check(
                "pymobiledevice3", "apps list", list,
                ran(list) && list.stdout.contains("\"\(bundleID)\"")
                    && list.stdout.contains("com.apple.mobilesafari")
                    && systemApps >= 20)
            let debianList = try await twin.debian("ideviceinstaller", ["-l"])
            check(
                "debian", "ideviceinstaller -l", debianList,
                debianList.succeeded && debianList.stdout.contains(bundleID))

            // AFC
            let local = twin.directory.appendingPathComponent("fidelity.txt")
            let contents = Data("pushed by pymobiledevice3 to \(udid)\n".utf8)
            try contents.write(to: local)
            let push = try await twin.pmd3(["afc", "push", local.path, "/Downloads/fidelity.txt"])
            check("pymobiledevice3", "afc push", push, ran(push))
            let ls = try await twin.pmd3(["afc", "ls", "/Downloads"])
            check("pymobiledevice3", "afc ls", ls, ran(ls) && ls.stdout.contains("fidelity.txt"))
            let pulled = twin.directory.appendingPathComponent("pulled.txt")
            let pull = try await twin.pmd3(["afc", "pull", "/Downloads/fidelity.txt", pulled.path])
            check(
                "pymobiledevice3", "afc pull", pull, ran(pull) && (try? Data(contentsOf: pulled)) == contents)

            // mobile_image_mounter, then the developer services it unlocks
            let ddi = try twin.developerImage()
            let mount = try await twin.pmd3([
                "mounter", "mount-developer", ddi.image.path, ddi.signature.path,
            ])
            check("pymobiledevice3", "mounter mount-developer", mount, ran(mount))
            let mounted = try await twin.pmd3(["mounter", "list"])
            check(
                "pymobiledevice3", "mounter list", mounted,
                ran(mounted) && mounted.stdout.contains("\"DiskImageType\": \"Developer\""))
            let debianMounted = try await twin.debian("ideviceimagemounter", ["-l"])
            check(
                "debian", "ideviceimagemounter -l", debianMounted,
                debianMounted.succeeded && debianMounted.stdout.contains("ImageSignature"))
            let screenshot = twin.directory.appendingPathComponent("screen.png")
            let shot = try await twin.pmd3(["developer", "screenshot", screenshot.path])
            let png =
                (try? Data(contentsOf: screenshot))?.prefix(8)
                == Data([0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A])
            check("pymobiledevice3", "developer screenshot", shot, ran(shot) && png)

            // The device log: the launched app's console lines show up in it. `syslog live` reads the
            // unified log (os_trace_relay, iOS 10+); `syslog live-old` the classic syslog_relay, the
            // only one an iOS 9 device has.
            for command in modern ? ["live", "live-old"] : ["live-old"] {
                let syslog = try twin.startPMD3(["syslog", command])
                // The Debian reader of syslog_relay must see the same lines.
                let debianSyslog = command == "live-old" ? try twin.startDebian("idevicesyslog", []) : nil
                // A reader sees only what is logged once it listens: launch when every one does.
                let readers = debianSyslog == nil ? 1 : 2
                _ = try await twin.waitUntil(deadline: 20) {
                    try await twin.daemon.logReaders(udid: udid) >= readers
                }
                let debug = try twin.startDebian("idevicedebug", ["run", bundleID])
                // The launch, then the launched app's own line (not one of an earlier launch).
                let launchThenProbe: (String) -> Bool = { text in
                    guard let launch = text.range(of: "Bootstrapping \(bundleID)") else { return false }
                    return text[launch.upperBound...].contains(ProbeBehaviour.line(udid))
                }
                let live = await syslog.stop(when: launchThenProbe, deadline: 40)
                check(
                    "pymobiledevice3", "syslog \(command)", live,
                    !live.timedOut && !live.stderr.contains("ERROR"))
                if let debianSyslog {
                    let read = await debianSyslog.stop(when: launchThenProbe, deadline: 10)
                    check("debian", "idevicesyslog", read, !read.timedOut)
                }
                _ = await debug.stop(when: { _ in true }, deadline: 1)
            }

            // crash reports: a crash the twin records, seen by both clients
            try await twin.daemon.inject(.crashOnLaunch, udid: udid)
            let crashed = try await twin.debian("idevicedebug", ["run", bundleID], deadline: 30)
            try await twin.daemon.clearFaults(udid: udid)
            let flush = try await twin.pmd3(["crash", "flush"], deadline: 20)
            check("pymobiledevice3", "crash flush", flush, ran(flush) && flush.seconds < 15)
            let crashList = try await twin.pmd3(["crash", "ls"])
            let reportName = crashList.stdout.split(whereSeparator: \.isNewline).map(String.init).first {
                $0.contains("Dashboard")
            }
            check("pymobiledevice3", "crash ls", crashList, ran(crashList) && reportName != nil)
            let crashDirectory = twin.directory.appendingPathComponent("crashes")
            let crashPull = try await twin.pmd3(["crash", "pull", crashDirectory.path])
            let pulledReports =
                (try? FileManager.default.contentsOfDirectory(atPath: crashDirectory.path)) ?? []
            check(
                "pymobiledevice3", "crash pull", crashPull,
                ran(crashPull) && pulledReports.contains { $0.hasPrefix("Dashboard") })
            let debianCrashes = twin.directory.appendingPathComponent("crashes-debian")
            try FileManager.default.createDirectory(at: debianCrashes, withIntermediateDirectories: true)
            let copy = try await twin.debian("idevicecrashreport", ["-k", debianCrashes.path])
            let debianReports =
                (try? FileManager.default.contentsOfDirectory(atPath: debianCrashes.path)) ?? []
            check(
                "debian", "idevicecrashreport -k", copy,
                copy.succeeded && !debianReports.isEmpty && Set(debianReports) == Set(pulledReports))
            #expect(crashed.status != 0 || crashed.output.contains("T06"), "\(crashed)")
            let parse = try await twin.pmd3(["crash", "parse", reportName ?? "/"])
            if modern {
                check(
                    "pymobiledevice3", "crash parse", parse,
                    ran(parse) && parse.stdout.contains("EXC_CRASH")
                        && parse.stdout.contains("__pthread_kill"))
            } else {
                // iOS 9 writes text .crash reports; pycrashreport reads only the JSON-headed .ips
                // format of iOS 10 and later, so it refuses this one as it would a real iPad 2's.
                check(
                    "pymobiledevice3", "crash parse (text report refused)", parse,
                    parse.status == 1 && parse.output.contains("Expecting value: line 1 column 1"))
            }

            // notification_proxy, secure and insecure
            for insecure in [false, true] {
                let name = "io.hadeploy.fidelity.\(insecure ? "insecure" : "secure")"
                let flag = insecure ? ["--insecure"] : []
                let observe = try twin.startPMD3(["notification", "observe", name] + flag)
                // Posted once the observer registered the name (a notification is relayed only to
                // those observing it when it is posted).
                _ = try await twin.waitUntil(deadline: 20) {
                    try await twin.daemon.observedNotifications(udid: udid).contains(name)
                }
                let post = try await twin.pmd3(["notification", "post", name] + flag)
                check("pymobiledevice3", "notification post\(insecure ? " --insecure" : "")", post, ran(post))
                let observed = await observe.stop(when: { $0.contains(name) }, deadline: 20)
                check(
                    "pymobiledevice3", "notification observe\(insecure ? " --insecure" : "")", observed,
                    !observed.timedOut)
            }

            // diagnostics_relay, springboardservices
            let diagnostics = try await twin.pmd3(["diagnostics", "info"])
            check(
                "pymobiledevice3", "diagnostics info", diagnostics,
                ran(diagnostics) && diagnostics.stdout.contains("GasGauge"))
            let orientation = try await twin.pmd3(["springboard", "orientation"])
            check(
                "pymobiledevice3", "springboard orientation", orientation,
                ran(orientation)
                    && (orientation.stdout.contains("PORTRAIT")
                        || orientation.stdout.trimmingCharacters(in: .whitespacesAndNewlines) == "1")
            )

            // unmount: iOS 14 added UnmountImage; an iOS 9 device keeps its image until it reboots
            let unmount = try await twin.pmd3(["mounter", "umount-developer"])
            if modern {
                check("pymobiledevice3", "mounter umount-developer", unmount, ran(unmount))
                let after = try await twin.debian(
                    "idevicescreenshot", [twin.directory.appendingPathComponent("no.png").path])
                check("debian", "idevicescreenshot refused after unmount", after, !after.succeeded)
            } else {
                check(
                    "pymobiledevice3", "mounter umount-developer (refused: no UnmountImage before iOS 14)",
                    unmount,
                    unmount.status == 1 && unmount.output.contains("doesn't support this command"))
            }

            // house_arrest: the app's container (VendContainer) and its Documents alone (VendDocuments)
            let pushContainer = try await twin.pmd3([
                "apps", "push", bundleID, local.path, "/Documents/fidelity.txt",
            ])
            check("pymobiledevice3", "apps push", pushContainer, ran(pushContainer))
            let fromContainer = twin.directory.appendingPathComponent("from-container.txt")
            let pullContainer = try await twin.pmd3([
                "apps", "pull", bundleID, "/Documents/fidelity.txt", fromContainer.path,
            ])
            check(
                "pymobiledevice3", "apps pull", pullContainer,
                ran(pullContainer) && (try? Data(contentsOf: fromContainer)) == contents)
            let fromDocuments = twin.directory.appendingPathComponent("from-documents.txt")
            let pullDocuments = try await twin.pmd3([
                "apps", "pull", "--documents", bundleID, "/fidelity.txt", fromDocuments.path,
            ])
            check(
                "pymobiledevice3", "apps pull --documents", pullDocuments,
                ran(pullDocuments) && (try? Data(contentsOf: fromDocuments)) == contents)

            let uninstall = try await twin.pmd3(["apps", "uninstall", bundleID])
            check("pymobiledevice3", "apps uninstall", uninstall, ran(uninstall))
            let debianAfter = try await twin.debian("ideviceinstaller", ["-l"])
            check(
                "debian", "ideviceinstaller -l after uninstall", debianAfter,
                debianAfter.succeeded && !debianAfter.stdout.contains(bundleID))
        }

        /// `lockdown date` prints the device clock in local time (`2026-11-23 10:25:30.123456`).
        static func isNow(_ output: String) -> Bool {
            let formatter = DateFormatter()
            formatter.locale = Locale(identifier: "en_POSIX")
            formatter.timeZone = TimeZone.current
            formatter.dateFormat = "yyyy-MM-dd HH:mm:ss"
            let text = output.trimmingCharacters(in: .whitespacesAndNewlines)
            guard text.count >= 19, let date = formatter.date(from: String(text.prefix(19))) else {
                return false
            }
            return abs(date.timeIntervalSinceNow) < 120
        }
    }
}
