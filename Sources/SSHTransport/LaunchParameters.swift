import Foundation
import HADeployCore

/// The arguments the dashboard app is started with.
public struct LaunchParameters: Sendable, Equatable {
    public var serverURL: String
    public var accessToken: Secret
    public var dashboard: String
    public var kioskMode: Bool
    public var deployID: String

    public init(serverURL: String, accessToken: Secret, dashboard: String, kioskMode: Bool, deployID: String)
    {
        self.serverURL = serverURL
        self.accessToken = accessToken
        self.dashboard = dashboard
        self.kioskMode = kioskMode
        self.deployID = deployID
    }

    /// The argument list, token included: only ever written to a channel's stdin.
    var arguments: [String] {
        [
            "-HAServerURL", serverURL, "-HAAccessToken", accessToken.reveal(), "-HADashboard", dashboard,
            "-HAKioskMode", kioskMode ? "YES" : "NO", "-HADeployID", deployID,
        ]
    }

    /// One argument per line, as the launch command reads them from stdin.
    var stdinPayload: Data {
        Data(arguments.map { $0.replacingOccurrences(of: "\n", with: " ") + "\n" }.joined().utf8)
    }

    var placeholders: [String: String] {
        [
            "server_url": serverURL, "dashboard": dashboard, "kiosk": kioskMode ? "YES" : "NO",
            "deploy_id": deployID,
        ]
    }
}
