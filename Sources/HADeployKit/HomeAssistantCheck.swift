import DeployModel
import HADeployCore
import HomeAssistant

/// `hadeploy verify`: the Home Assistant preflight a deploy runs, on its own — server, token,
/// version, one dashboard and the entities it uses.
public struct HomeAssistantCheck: Sendable {
    public var variables: [String: String]
    /// Times the preflight's deadlines.
    public var clock: any WallClock

    public init(variables: [String: String], clock: any WallClock) {
        self.variables = variables
        self.clock = clock
    }

    /// `--server` wins over HA_SERVER; the dashboard is `--dashboard`, `--default`, HA_DASHBOARD, or
    /// the default dashboard.
    public func run(server: String?, dashboard: DashboardChoice) async throws -> PreflightReport {
        guard let url = server ?? variables["HA_SERVER"].flatMap({ $0.isEmpty ? nil : $0 }) else {
            throw ConfigurationMissing(keys: ["HA_SERVER"])
        }
        guard let token = variables["HA_TOKEN"], !token.isEmpty else {
            throw ConfigurationMissing(keys: ["HA_TOKEN"])
        }
        let selection: DashboardSelection
        switch dashboard {
        case .named(let name): selection = .named(name)
        case .appDefault: selection = .defaultDashboard
        case .unspecified:
            selection =
                variables["HA_DASHBOARD"].flatMap { $0.isEmpty ? nil : .named($0) } ?? .defaultDashboard
        }
        let address: ServerAddress
        do {
            address = try ServerAddress(url)
        } catch {
            throw ConfigurationMissing(keys: [], detail: "--server/HA_SERVER: \(error)")
        }
        let options = ClientOptions(
            server: address, token: AccessToken(token), clock: clock,
            caFile: variables["HA_CA_FILE"].flatMap { $0.isEmpty ? nil : $0 })
        return await Preflight(options: options).run(dashboard: selection)
    }

    /// The report as the terminal shows it.
    public static func text(_ report: PreflightReport) -> String {
        var lines = ["Home Assistant: \(report.server)"]
        lines.append("  reachable:  \(report.reachable ? "yes" : "no")")
        lines.append("  token:      \(report.tokenAccepted ? "accepted" : "not accepted")")
        if let version = report.homeAssistantVersion { lines.append("  version:    \(version)") }
        if let check = report.dashboard {
            // "not found" only when Home Assistant said so: a request that failed checked nothing.
            let found =
                check.exists
                ? "found"
                : report.issues.contains { $0.code == "dashboard_not_found" } ? "not found" : "not checked"
            lines.append("  dashboard:  \(check.urlPath ?? "(default)") \(found)")
            if !check.exists && !check.availableDashboards.isEmpty {
                lines.append("  dashboards that exist: \(check.availableDashboards.joined(separator: ", "))")
            }
        }
        for missing in report.missingEntities {
            lines.append(
                "  warning: \(missing.entityID) is missing (used at \(missing.usedAt.joined(separator: ", ")))"
            )
        }
        for issue in report.errors { lines.append("  error: \(issue.message)") }
        lines.append(report.passed ? "ok" : "failed")
        return lines.joined(separator: "\n")
    }
}

/// Keys a command needs that are neither in .env nor the environment (exit 78).
public struct ConfigurationMissing: Error, CustomStringConvertible, ExitStatusProviding {
    public var keys: [String]
    public var detail: String? = nil

    public var description: String {
        detail ?? "\(keys.joined(separator: ", ")) not set: add to .env (see .env.example) or export it"
    }
    public var exitStatus: ExitStatus { .config }
}
