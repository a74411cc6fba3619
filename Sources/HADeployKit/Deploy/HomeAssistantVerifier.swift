import DeviceSpec
import Foundation
import HADeployCore
import HomeAssistant
import Logging

/// The Home Assistant side of a deploy, over the bundled client: preflight once, then one shared
/// connection on which each device's `ha_dashboard_loaded` subscription is made before its launch.
public actor HomeAssistantVerifier: DashboardVerifier {
    let options: ClientOptions
    private var connection: HomeAssistantConnection?

    public init(server: String, token: Secret, caFile: String? = nil) throws {
        options = ClientOptions(
            server: try ServerAddress(server), token: AccessToken(token.reveal()), caFile: caFile,
            logger: Logger(label: "hadeploy.homeassistant"))
    }

    /// Returns notes for the log; throws when a deploy must not go on (unreachable, token refused,
    /// dashboard missing). Missing entities are warnings.
    public func preflight(dashboards: [String?]) async throws -> [String] {
        var notes: [String] = []
        var seen = Set<String>()
        for dashboard in dashboards where seen.insert(dashboard ?? "").inserted {
            let report = await Preflight(options: options).run(
                dashboard: dashboard.map { .named($0) } ?? .defaultDashboard)
            if !report.passed {
                throw PreflightFailure(report: report)
            }
            if notes.isEmpty, let version = report.homeAssistantVersion {
                notes.append("Home Assistant \(version) at \(report.server): token accepted")
            }
            let name = dashboard ?? "the default dashboard"
            notes.append(
                "dashboard \(name): found, \(report.dashboard?.referencedEntities ?? 0) entities referenced")
            for missing in report.missingEntities {
                notes.append(
                    "warning: dashboard \(name) uses \(missing.entityID), which Home Assistant does not have "
                        + "(at \(missing.usedAt.joined(separator: ", ")))")
            }
        }
        return notes
    }

    func shared() async throws -> HomeAssistantConnection {
        if let connection { return connection }
        let connection = HomeAssistantConnection(options: options)
        try await connection.connect()
        self.connection = connection
        return connection
    }

    public func expectLoaded(deployID: String, device: String) async throws -> any LoadedWaiter {
        let waiter = try await DashboardLoadWaiter.subscribe(
            on: try await shared(), deployID: deployID, device: device)
        return Waiter(waiter: waiter)
    }

    /// The app's own evidence (issue 14) is read here once the log reader lands; until then a device
    /// without the loaded event cannot be proven loaded, and says so.
    public func verifyLoaded(
        device: DevicePlan, driver: any DeviceDriver, artifact: Artifact, launchedAt: Date, timeout: Duration
    ) async -> Verification {
        .notLoaded(
            reason: "no evidence reader for the app's log yet (enable loaded_event for event-sending builds)")
    }

    public func close() async {
        await connection?.close()
        connection = nil
    }

    struct Waiter: LoadedWaiter {
        let waiter: DashboardLoadWaiter

        func wait(timeout: Duration) async -> Verification {
            switch await waiter.wait(timeout: timeout) {
            case .loaded(let after, _):
                return .loaded(seconds: after.seconds)
            case .notLoaded(let reason):
                return .notLoaded(reason: reason.message)
            }
        }

        func cancel() async { await waiter.cancel() }
    }
}

/// The preflight found a reason not to deploy.
public struct PreflightFailure: Error, CustomStringConvertible, ExitStatusProviding {
    public var report: PreflightReport

    public var description: String {
        var lines = ["Home Assistant preflight failed for \(report.server):"]
        lines += report.errors.map { "  \($0.message)" }
        lines.append("Nothing was deployed. Fix the above, or pass --no-verify to deploy without the check.")
        return lines.joined(separator: "\n")
    }

    public var exitStatus: ExitStatus { .failure }
}
