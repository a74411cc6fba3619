/// Which dashboard the app opens.
public enum DashboardChoice: Sendable, Hashable, Codable {
    /// Nothing said on the command line: the device's, then HA_DASHBOARD, then the app's default.
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
    /// nil = each device's own setting.
    public var kiosk: Bool?
    public var verify: Bool
    public var force: Bool

    public init(
        targets: [String], build: Bool = true, dashboard: DashboardChoice = .unspecified,
        server: String? = nil, kiosk: Bool? = nil, verify: Bool = true, force: Bool = false
    ) {
        self.targets = targets
        self.build = build
        self.dashboard = dashboard
        self.server = server
        self.kiosk = kiosk
        self.verify = verify
        self.force = force
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
