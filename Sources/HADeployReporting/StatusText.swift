import DeployModel
import Foundation
import HADeployCore

/// `hadeploy status` as a table, as JSON, and as a contact sheet.
public enum StatusText {
    /// One line per device, then what needs attention, device by device.
    public static func table(_ report: StatusReport) -> String {
        var rows = [
            [
                "DEVICE", "IOS", "BACKEND", "BUILD", "APP", "DASHBOARD", "HA DASHBOARD", "BATTERY", "FREE",
                "REBOOTED", "VERIFIED", "PROFILE UNTIL",
            ]
        ]
        for device in report.devices {
            if let reason = device.notOnThisHost {
                rows.append([device.id, "-", device.backend, "not available on this host: \(reason)"])
                continue
            }
            guard device.reachable else {
                rows.append([device.id, "-", device.backend, "NOT REACHED: \(device.unreachable ?? "?")"])
                continue
            }
            rows.append([
                device.id, device.ios.value ?? "?",
                device.backend + (device.address.map { " at \($0)" } ?? ""), build(device),
                device.running.value.map { $0 ? "running" : "not running" } ?? "?",
                device.dashboard.value.map { ReportWriter.shortReason($0.summary, limit: 40) } ?? "?",
                homeAssistant(device) ?? "-",
                device.battery.value.map(battery) ?? "?",
                device.storage.value.map { Format.bytes($0.availableBytes) } ?? "?",
                device.rebootedSinceDeploy.value.map { $0 ? "yes" : "no" } ?? "?",
                device.lastVerifiedAt.map(day) ?? "never",
                profile(device),
            ])
        }
        var lines = SummaryTable.aligned(rows)
        let needing = report.devices.filter { !$0.attention.isEmpty }
        for device in needing {
            lines.append("\(device.id): " + device.attention.joined(separator: "; "))
        }
        let unknown = report.devices.filter(\.reachable).flatMap(unknowns)
        if !unknown.isEmpty {
            lines.append("? = not known:")
            lines += Array(Set(unknown)).sorted().map { "  \($0)" }
        }
        lines.append(
            "\(report.devices.count) device(s): "
                + (needing.isEmpty ? "nothing needs attention" : "\(needing.count) need(s) attention"))
        return lines.joined(separator: "\n")
    }

    /// `installed → expected`, or the state.
    static func build(_ device: DeviceStatus) -> String {
        switch device.build {
        case .upToDate: return "\(device.expected.build.description) up to date"
        case .outdated:
            return
                "\(device.installed.value??.description ?? "?") outdated (→ \(device.expected.build.description))"
        case .missing: return "missing"
        case .unknown: return "?"
        }
    }

    /// What the app last reported to Home Assistant as `active_dashboard`; nil: not asked (the
    /// device's `ha_integration` is off).
    static func homeAssistant(_ device: DeviceStatus) -> String? {
        guard let fact = device.homeAssistantDashboard else { return nil }
        return fact.value ?? "?"
    }

    /// The installed build's profile expiry (its day), "-" with none on the device, "?" unknown.
    static func profile(_ device: DeviceStatus) -> String {
        switch device.profile {
        case .known(let state?): return state.expires.map { String(day($0).prefix(10)) } ?? "never expires"
        case .known(nil): return "-"
        case .unavailable: return "?"
        }
    }

    static func battery(_ state: BatteryState) -> String {
        "\(state.level) %"
            + (state.charging ? " charging" : state.externalPower == false ? " on battery" : "")
    }

    static func day(_ date: Date) -> String {
        let formatter = DateFormatter()
        formatter.locale = Locale(identifier: "en_US_POSIX")
        formatter.dateFormat = "yyyy-MM-dd HH:mm"
        formatter.timeZone = TimeZone(identifier: "UTC")
        return formatter.string(from: date) + "Z"
    }

    /// Why each `?` of a reached device is one, in the backend's words.
    static func unknowns(_ device: DeviceStatus) -> [String] {
        [
            device.installed.reason, device.running.reason, device.dashboard.reason, device.battery.reason,
            device.storage.reason, device.rebootedSinceDeploy.reason, device.homeAssistantDashboard?.reason,
        ].compactMap { $0.map { "\(device.id): \($0)" } }
    }

    public static func json(_ report: StatusReport) throws -> String {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys, .withoutEscapingSlashes]
        encoder.dateEncodingStrategy = .iso8601
        return URLCredentials.redact(String(decoding: try encoder.encode(report), as: UTF8.self))
    }
}

extension ReportWriter {
    /// `status.json` and `index.html`: a card per device with its facts and what needs attention.
    public func write(_ report: StatusReport) throws {
        try fileSystem.createDirectory(at: directory, withIntermediateDirectories: true)
        let writer = FileWriter(fileSystem: fileSystem)
        try writer.write(
            Data(try StatusText.json(report).utf8), to: directory.appendingPathComponent("status.json"))
        try writer.write(Data(statusHTML(report).utf8), to: directory.appendingPathComponent("index.html"))
    }

    func statusHTML(_ report: StatusReport) -> String {
        let h = Self.xml
        var cards = ""
        for device in report.devices {
            let label: String
            let style: String
            if device.notOnThisHost != nil {
                (label, style) = ("not available", "other")
            } else if !device.reachable {
                (label, style) = ("not reached", "failed")
            } else if device.attention.isEmpty {
                (label, style) = ("fine", "verified")
            } else {
                (label, style) = ("needs attention", "installed")
            }
            var facts: [(String, String)] = []
            if let reason = device.notOnThisHost ?? device.unreachable {
                facts.append(("why", reason))
            } else {
                facts += [
                    ("iOS", device.ios.value ?? device.ios.reason ?? ""), ("build", StatusText.build(device)),
                    (
                        "app",
                        device.running.value.map { $0 ? "running" : "not running" } ?? device.running.reason
                            ?? ""
                    ),
                    ("dashboard", device.dashboard.value?.summary ?? device.dashboard.reason ?? ""),
                    (
                        "Home Assistant's active_dashboard",
                        device.homeAssistantDashboard.map { $0.value ?? $0.reason ?? "" }
                            ?? "not asked (ha_integration off)"
                    ),
                    ("battery", device.battery.value.map(StatusText.battery) ?? device.battery.reason ?? ""),
                    (
                        "free",
                        device.storage.value.map { Format.bytes($0.availableBytes) } ?? device.storage.reason
                            ?? ""
                    ),
                    (
                        "restarted since deploy",
                        device.rebootedSinceDeploy.value.map { $0 ? "yes" : "no" } ?? device
                            .rebootedSinceDeploy.reason ?? ""
                    ),
                    ("last verified", device.lastVerifiedAt.map(StatusText.day) ?? "never"),
                    (
                        "provisioning profile",
                        device.profile.value.map { state in
                            state.map { "'\($0.name)' (\($0.uuid)), until \(StatusText.profile(device))" }
                                ?? "none on the device for this app"
                        } ?? device.profile.reason ?? ""
                    ),
                ]
            }
            let rows = facts.map { "<tr><td>\(h($0.0))</td><td>\(h($0.1))</td></tr>" }.joined()
            let attention = device.attention.map { "<li>\(h($0))</li>" }.joined()
            cards += """
                <section class="card" data-device="\(h(device.id))">
                  <h2>\(h(device.name)) <small>\(h(device.id)) · \(h(device.backend))</small></h2>
                  <p><span class="badge \(style)">\(h(label))</span></p>
                  \(attention.isEmpty ? "" : "<ul class=\"attention\">\(attention)</ul>")
                  <table>\(rows)</table>
                </section>

                """
        }
        return """
            <!DOCTYPE html>
            <html lang="en"><head><meta charset="utf-8">
            <title>hadeploy status — \(h(StatusText.day(report.checkedAt)))</title>
            <style>
            body{font-family:-apple-system,system-ui,sans-serif;margin:24px;background:#f5f5f7;color:#111}
            .grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(300px,1fr));gap:16px}
            .card{background:#fff;border-radius:12px;padding:16px;box-shadow:0 1px 3px #0002}
            h2{font-size:18px;margin:0 0 4px} h2 small{font-weight:normal;color:#666;font-size:13px}
            .badge{display:inline-block;padding:3px 10px;border-radius:999px;font-weight:bold;font-size:13px;color:#fff}
            .badge.verified{background:#1b873f} .badge.installed{background:#b07800} .badge.failed{background:#c62828}
            .badge.other{background:#6e6e73} ul.attention{color:#8a4b00;font-size:13px;padding-left:18px}
            table{font-size:13px;border-collapse:collapse;width:100%} td{border-top:1px solid #eee;padding:2px 4px}
            </style></head><body>
            <h1>hadeploy status</h1>
            <p>\(h(StatusText.day(report.checkedAt))) · a deploy would install \(h(report.version)) · \(report.devices.count) device(s)</p>
            <div class="grid">
            \(cards)</div>
            </body></html>

            """
    }
}
