import Foundation
import HADeployCore

/// The arguments the dashboard app is started with, in order, secrets marked.
///
/// Only `stdinPayload` (handed to the launch command's stdin) ever contains a secret's value;
/// `description` shows secrets as `***`.
public struct LaunchParameters: Sendable, Equatable, CustomStringConvertible, CustomDebugStringConvertible {
    public struct Argument: Sendable, Equatable {
        public var flag: String
        public var value: String
        public var isSecret: Bool

        public init(flag: String, value: String, isSecret: Bool = false) {
            self.flag = flag
            self.value = value
            self.isSecret = isSecret
        }
    }

    public var arguments: [Argument]

    /// Any argument list, e.g. the Kit's `LaunchArguments.items` mapped one to one.
    public init(arguments: [Argument]) {
        self.arguments = arguments
    }

    /// The launch contract: `-HAServerURL -HAAccessToken (-HADashboard | -HADefaultDashboard YES)
    /// -HAKioskMode -HADeployID [-HADeviceID]`.
    public init(
        serverURL: String, accessToken: Secret, dashboard: String?, kioskMode: Bool, deployID: String,
        deviceID: String? = nil
    ) {
        var arguments = [
            Argument(flag: "-HAServerURL", value: serverURL),
            Argument(flag: "-HAAccessToken", value: accessToken.reveal(), isSecret: true),
        ]
        if let dashboard {
            arguments.append(Argument(flag: "-HADashboard", value: dashboard))
        } else {
            arguments.append(Argument(flag: "-HADefaultDashboard", value: "YES"))
        }
        arguments.append(Argument(flag: "-HAKioskMode", value: kioskMode ? "YES" : "NO"))
        arguments.append(Argument(flag: "-HADeployID", value: deployID))
        if let deviceID { arguments.append(Argument(flag: "-HADeviceID", value: deviceID)) }
        self.arguments = arguments
    }

    /// Flag and value lines, one per line, as the launch command reads them from stdin. Secrets included.
    var stdinPayload: Data {
        let lines = arguments.flatMap { [$0.flag, $0.value] }.map {
            $0.replacingOccurrences(of: "\n", with: " ") + "\n"
        }
        return Data(lines.joined().utf8)
    }

    /// Placeholders for the launch template: every non-secret argument as `{HAServerURL}` (flag without
    /// the dash), plus the short names `{server_url}`, `{dashboard}`, `{kiosk}`, `{deploy_id}`, `{device_id}`.
    var placeholders: [String: String] {
        var values: [String: String] = [:]
        let short = [
            "-HAServerURL": "server_url", "-HADashboard": "dashboard", "-HAKioskMode": "kiosk",
            "-HADeployID": "deploy_id", "-HADeviceID": "device_id",
        ]
        for argument in arguments where !argument.isSecret {
            let name = argument.flag.hasPrefix("-") ? String(argument.flag.dropFirst()) : argument.flag
            values[name] = argument.value
            if let key = short[argument.flag] { values[key] = argument.value }
        }
        return values
    }

    /// The secret values, to keep them out of anything echoed.
    var secretValues: [String] { arguments.filter(\.isSecret).map(\.value).filter { !$0.isEmpty } }

    public var description: String {
        arguments.flatMap { [$0.flag, $0.isSecret ? Secret.redacted : $0.value] }.joined(separator: " ")
    }

    public var debugDescription: String { description }
}
