import Foundation

/// Writes an app crash report the way the device's ReportCrash does.
///
/// iOS 15 writes `<Process>-<date>.ips`: one line of JSON metadata (`bug_type` 309 = app crash),
/// then the report itself as a JSON document (pymobiledevice3's `crash parse` reads both). iOS 9
/// writes `<Process>_<date>_<device>.crash` as plain text, which the tools copy as is. Reports
/// between the two (iOS 10-14: JSON metadata + text body) are not emulated; the presets have none.
struct CrashReportWriter {
    let profile: VirtualDeviceProfile
    let udid: String

    struct Report {
        let name: String
        let contents: Data
    }

    func report(for app: VirtualInstalledApp, reason: String, pid: Int, date: Date = EmulatorClock.now())
        throws -> Report
    {
        let incident = UUID().uuidString
        if profile.majorVersion >= 15 {
            let name = "\(app.executable)-\(stamp(date, "yyyy-MM-dd-HHmmss")).ips"
            return Report(name: name, contents: try jsonReport(app, reason, pid, date, incident))
        }
        let device = profile.deviceName.replacingOccurrences(of: " ", with: "-")
        let name = "\(app.executable)_\(stamp(date, "yyyy-MM-dd-HHmmss"))_\(device).crash"
        return Report(name: name, contents: Data(textReport(app, reason, pid, date, incident).utf8))
    }

    private func stamp(_ date: Date, _ format: String) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.timeZone = TimeZone(identifier: "UTC")
        formatter.dateFormat = format
        return formatter.string(from: date)
    }

    private var osVersion: String { "iPhone OS \(profile.productVersion) (\(profile.buildVersion))" }

    private func textReport(
        _ app: VirtualInstalledApp, _ reason: String, _ pid: Int, _ date: Date, _ incident: String
    ) -> String {
        let time = stamp(date, "yyyy-MM-dd HH:mm:ss.SSS Z")
        return """
            Incident Identifier: \(incident)
            CrashReporter Key:   \(udid)
            Hardware Model:      \(profile.hardwareModel)
            Process:             \(app.executable) [\(pid)]
            Path:                \(app.path)/\(app.executable)
            Identifier:          \(app.bundleIdentifier)
            Version:             \(app.bundleVersion) (\(app.shortVersion ?? app.bundleVersion))
            Code Type:           \(profile.cpuArchitecture == "armv7" ? "ARM" : "ARM-64") (Native)
            Parent Process:      launchd [1]

            Date/Time:           \(time)
            Launch Time:         \(time)
            OS Version:          \(osVersion)
            Report Version:      104

            Exception Type:      EXC_CRASH (SIGABRT)
            Exception Codes:     0x0000000000000000, 0x0000000000000000
            Exception Note:      EXC_CORPSE_NOTIFY
            Triggered by Thread: 0

            Application Specific Information:
            \(reason)

            Thread 0 Crashed:
            0   libsystem_kernel.dylib        \t0x00000000234a2c5c 0x234a8c000 + 23644


            """
    }

    private func jsonReport(
        _ app: VirtualInstalledApp, _ reason: String, _ pid: Int, _ date: Date, _ incident: String
    ) throws -> Data {
        let timestamp = stamp(date, "yyyy-MM-dd HH:mm:ss.SS Z")
        let metadata: [String: Any] = [
            "app_name": app.executable, "timestamp": timestamp,
            "app_version": app.shortVersion ?? app.bundleVersion,
            "slice_uuid": UUID().uuidString.lowercased(),
            "adam_id": 0, "build_version": app.bundleVersion, "bundleID": app.bundleIdentifier,
            "share_with_app_devs": 0, "is_first_party": 0, "bug_type": "309", "os_version": osVersion,
            "incident_id": incident, "name": app.executable,
        ]
        let kernelBase = 0x1_b8d0_c000
        let body: [String: Any] = [
            "uptime": 1200, "procLaunch": timestamp, "procRole": "Foreground", "version": 2, "userID": 501,
            "deployVersion": 210, "modelCode": profile.productType, "captureTime": timestamp,
            "incident": incident, "bug_type": "309", "pid": pid, "cpuType": "ARM-64",
            "procName": app.executable, "procPath": "\(app.path)/\(app.executable)",
            "osVersion": [
                "isEmbedded": true, "train": "iPhone OS \(profile.productVersion)", "releaseType": "User",
                "build": profile.buildVersion,
            ],
            "bundleInfo": [
                "CFBundleShortVersionString": app.shortVersion ?? app.bundleVersion,
                "CFBundleVersion": app.bundleVersion, "CFBundleIdentifier": app.bundleIdentifier,
            ],
            "parentProc": "launchd", "parentPid": 1, "crashReporterKey": udid, "isCorpse": 1,
            "exception": [
                "codes": "0x0000000000000000, 0x0000000000000000", "rawCodes": [0, 0], "type": "EXC_CRASH",
                "signal": "SIGABRT",
            ],
            "asi": ["libsystem_c.dylib": [reason]],
            "faultingThread": 0,
            "threads": [
                [
                    "triggered": true, "id": 4242, "queue": "com.apple.main-thread",
                    "threadState": [
                        "x": (0..<29).map { ["value": $0 == 0 ? 0 : 0x1_0000_0000 + $0] },
                        "flavor": "ARM_THREAD_STATE64", "lr": ["value": kernelBase + 0x7f30],
                        "cpsr": ["value": 0x4000_0000], "fp": ["value": 0x16d0_3ea0],
                        "sp": ["value": 0x16d0_3e80],
                        "pc": ["value": kernelBase + 0x7bbc, "matchesCrashFrame": 1],
                        "far": ["value": 0],
                    ] as [String: Any],
                    "frames": [
                        [
                            "imageOffset": 0x7bbc, "symbol": "__pthread_kill", "symbolLocation": 8,
                            "imageIndex": 0,
                        ],
                        ["imageOffset": 0x1c0c, "symbol": "abort", "symbolLocation": 164, "imageIndex": 1],
                    ],
                ] as [String: Any]
            ],
            "usedImages": [
                [
                    "source": "P", "arch": "arm64", "base": kernelBase, "size": 204_800,
                    "uuid": "e0e5d6a2-0b2d-3b5e-9d7a-6a7b1c2d3e4f",
                    "path": "/usr/lib/system/libsystem_kernel.dylib",
                    "name": "libsystem_kernel.dylib",
                ],
                [
                    "source": "P", "arch": "arm64", "base": 0x1_8c6f_4000, "size": 520_192,
                    "uuid": "4b1f0e8c-5d2a-3f9e-8c7b-2a1d0e9f8c7b",
                    "path": "/usr/lib/system/libsystem_c.dylib",
                    "name": "libsystem_c.dylib",
                ],
            ],
            "legacyInfo": ["threadTriggered": ["queue": "com.apple.main-thread"]],
        ]
        var data = try JSONSerialization.data(withJSONObject: metadata, options: [.sortedKeys])
        data.append(0x0A)
        data.append(try JSONSerialization.data(withJSONObject: body, options: [.prettyPrinted, .sortedKeys]))
        return data
    }
}
