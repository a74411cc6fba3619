import HADeployCore

/// Which dashboard the app opens.
public enum DashboardChoice: Sendable, Hashable, Codable {
    /// Nothing said on the command line: the device's, then HA_DASHBOARD, else unchanged.
    case unspecified
    /// `--dashboard NAME`.
    case named(String)
    /// `--default`: the app's default dashboard, whatever devices.yaml or .env say.
    case appDefault
}

/// What the user asked for on the command line, before anything is resolved.
public struct DeployOptions: Sendable, Hashable {
    public var targets: [String]
    public var build: Bool
    public var dashboard: DashboardChoice
    public var server: String?
    /// nil = each device's own setting (not sent when the device has none).
    public var kiosk: Bool?
    public var verify: Bool
    public var force: Bool
    /// `--token`: this launch only, instead of HA_TOKEN.
    public var token: Secret?
    /// `--reset`: `-HAClearCredentials YES` instead of server and token.
    public var reset: Bool
    /// `--demo`: `-HADemoMode YES` (no Home Assistant).
    public var demo: Bool
    /// `--report DIR`: screenshots are taken for the report.
    public var screenshots: Bool
    /// What `--no-build` installs (`--artifact`, `--artifacts`, the twins' demo bundles).
    public var artifacts: ArtifactPlan = .nothing
    /// The project the plan is made for (`ProjectFingerprint`), recorded in the plan.
    public var project: String = ""

    public init(
        targets: [String], build: Bool = true, dashboard: DashboardChoice = .unspecified,
        server: String? = nil, kiosk: Bool? = nil, verify: Bool = true, force: Bool = false,
        token: Secret? = nil, reset: Bool = false, demo: Bool = false, screenshots: Bool = false
    ) {
        self.targets = targets
        self.build = build
        self.dashboard = dashboard
        self.server = server
        self.kiosk = kiosk
        self.verify = verify
        self.force = force
        self.token = token
        self.reset = reset
        self.demo = demo
        self.screenshots = screenshots
    }
}

/// The platform hadeploy runs on decides which transports are possible at all.
public enum HostPlatform: String, Sendable, Codable {
    case linux, macOS

    public static var current: HostPlatform {
        #if os(macOS)
            return .macOS
        #else
            return .linux
        #endif
    }
}
