import DeployModel
import Foundation

/// The launch as a jailbroken device takes it: the app's preferences (`LaunchPreferences`), the argument
/// lines on the launch command's stdin, and the placeholders of a `launch:` template (never a secret).
extension ResolvedLaunch {
    /// Flag and value lines, one per line, as the launch command reads them from stdin. Secrets included.
    var stdinPayload: Data {
        let lines = arguments.map { $0.replacingOccurrences(of: "\n", with: " ") + "\n" }
        return Data(lines.joined().utf8)
    }

    /// Placeholders for the launch template: every non-secret setting as `{HAServerURL}` (flag without
    /// the dash), plus the short names `{server_url}`, `{dashboard}`, `{kiosk}`, `{deploy_id}`, `{device_id}`.
    var placeholders: [String: String] {
        var values: [String: String] = [:]
        let short = [
            "-HAServerURL": "server_url", "-HADashboard": "dashboard", "-HAKioskMode": "kiosk",
            "-HADeployID": "deploy_id", "-HADeviceID": "device_id",
        ]
        for item in argumentList.items where !item.isSecret {
            let name = item.flag.hasPrefix("-") ? String(item.flag.dropFirst()) : item.flag
            let value = item.value.value ?? ""
            values[name] = value
            if let key = short[item.flag] { values[key] = value }
        }
        return values
    }
}
