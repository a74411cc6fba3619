import DeployModel
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
    /// The dashboards the preflight found unusable, by url_path ("" = the default), with why.
    private var refusedDashboards: [String: String] = [:]

    public init(server: String, token: Secret, caFile: String? = nil, clock: any WallClock) throws {
        options = ClientOptions(
            server: try ServerAddress(server), token: AccessToken(token.reveal()), clock: clock,
            caFile: caFile,
            logger: Logger(label: "hadeploy.homeassistant"))
    }

    /// Returns notes for the log; throws when a deploy must not go on (unreachable, token refused:
    /// what every device needs). A dashboard that cannot be used fails only the devices that show it
    /// (`refusal(forDashboard:)`). Missing entities are warnings.
    public func preflight(dashboards: [String?]) async throws -> [String] {
        var notes: [String] = []
        var seen = Set<String>()
        for dashboard in dashboards where seen.insert(dashboard ?? "").inserted {
            let report = await Preflight(options: options).run(
                dashboard: dashboard.map { .named($0) } ?? .defaultDashboard)
            if !report.passed {
                let errors = report.errors
                guard !errors.isEmpty, errors.allSatisfy({ $0.code.hasPrefix("dashboard_") }) else {
                    throw PreflightFailure(report: report)
                }
                let why = errors.map(\.message).joined(separator: "; ")
                refusedDashboards[dashboard ?? ""] = why
                notes.append(
                    "dashboard \(dashboard ?? "the default dashboard"): \(why) — the devices that show it fail, "
                        + "the others go on")
                continue
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

    public func refusal(forDashboard dashboard: String?) -> String? {
        refusedDashboards[dashboard ?? ""]
    }

    func shared() async throws -> HomeAssistantConnection {
        if let connection { return connection }
        let connection = HomeAssistantConnection(options: options)
        try await connection.connect()
        self.connection = connection
        return connection
    }

    /// What each named mobile_app device last reported as `active_dashboard` (`hadeploy status`):
    /// the sensor's state now, or why it cannot be told. One states read for all (the registries
    /// are read per device); throws when Home Assistant cannot be read at all.
    public func activeDashboards(deviceNames: [String]) async throws -> [String: Fact<String>] {
        let connection = try await shared()
        let states = Dictionary(
            try await connection.states().map { ($0.entityID, $0.state) }, uniquingKeysWith: { a, _ in a })
        var result: [String: Fact<String>] = [:]
        for name in deviceNames where result[name] == nil {
            do {
                guard
                    let sensor = try await connection.mobileAppSensor(
                        deviceName: name, key: "active_dashboard")
                else {
                    result[name] = .unavailable(
                        "Home Assistant has no mobile_app device named '\(name)' with an active_dashboard sensor "
                            + "(turn on the app's device integration, or -HAAutoRegister YES)")
                    continue
                }
                switch states[sensor.entityID] {
                case nil, "unknown"?, "unavailable"?:
                    result[name] = .unavailable("\(sensor.entityID) has no value yet")
                case let value?:
                    result[name] = .known(value)
                }
            } catch {
                result[name] = .unavailable(
                    "Home Assistant's device registry could not be read: \(SystemErrorText.message(error))")
            }
        }
        return result
    }

    public func expectLoaded(deployID: String, device: String) async throws -> any LoadedWaiter {
        do {
            let waiter = try await DashboardLoadWaiter.subscribe(
                on: try await shared(), deployID: deployID, device: device)
            return Waiter(waiter: waiter)
        } catch let error as HomeAssistantError {
            // The preflight passed, so Home Assistant went away during the run: say so, and where.
            switch error.kind {
            case .unreachable, .timedOut, .notConnected, .invalidResponse:
                throw StoppedAnswering(
                    server: options.server.baseURL,
                    step: "subscribing to \(DashboardLoadedEvent.eventType) for \(device)",
                    detail: error.message)
            default:
                throw error
            }
        }
    }

    /// Home Assistant answered the preflight and then stopped answering.
    struct StoppedAnswering: Error, CustomStringConvertible {
        var server: String
        var step: String
        var detail: String

        var description: String {
            "Home Assistant at \(server) stopped answering (\(step)): \(detail)"
        }
    }

    /// The app's own evidence (issue 14) is read here once the log reader lands; until then a device
    /// without the loaded event cannot be proven loaded, and says so.
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

extension HomeAssistantVerifier {
    public func expectedDashboard(_ dashboard: String?) async throws -> ExpectedDashboard {
        do {
            return .shape(LovelaceShape(try await shared().lovelaceConfig(urlPath: dashboard)))
        } catch let error as HomeAssistantError
            where error.code == "config_not_found" && !error.message.contains("Unknown config specified")
        {
            // Never saved: Home Assistant shows a generated dashboard for it, and so does the app.
            return .generatedDefault
        }
    }

    public func watchActiveDashboard(deviceName: String, deployID: String) async -> any ActiveDashboardWatch {
        let watch = SensorWatch(
            connection: try? await shared(), rest: try? HomeAssistantREST(options: options),
            deviceName: deviceName,
            sentinel: "hadeploy-launching-\(deployID)")
        await watch.arm()
        return watch
    }

    /// Before the launch the sensor is set to a sentinel through REST: the app's report then changes
    /// it even when it reports the same dashboard as last time (HA 2024.3 records a write only
    /// when the value changes). A device that registers during the launch counts with its first value.
    actor SensorWatch: ActiveDashboardWatch {
        let connection: HomeAssistantConnection?
        let rest: HomeAssistantREST?
        let deviceName: String
        let sentinel: String
        private var armedEntity: String?
        /// The entity as found before the launch when the sentinel could not be set.
        private var unarmed: (entity: String, lastUpdated: String?)?
        private var note = "no mobile_app device named"

        init(
            connection: HomeAssistantConnection?, rest: HomeAssistantREST?, deviceName: String,
            sentinel: String
        ) {
            self.connection = connection
            self.rest = rest
            self.deviceName = deviceName
            self.sentinel = sentinel
        }

        deinit {
            let rest = rest
            Task { try? await rest?.shutdown() }
        }

        func arm() async {
            guard let connection, let rest else {
                note = "Home Assistant could not be reached to find"
                return
            }
            guard
                let sensor = try? await connection.mobileAppSensor(
                    deviceName: deviceName, key: "active_dashboard")
            else { return }
            let before = try? await rest.state(of: sensor.entityID)
            if (try? await rest.setState(
                sensor.entityID, state: sentinel, attributes: before?.attributes ?? [:]))
                != nil
            {
                armedEntity = sensor.entityID
            } else {
                unarmed = (sensor.entityID, before?.lastUpdated)
            }
        }

        func reportedValue() async -> String? {
            guard let connection, let rest else { return nil }
            guard
                let sensor = try? await connection.mobileAppSensor(
                    deviceName: deviceName, key: "active_dashboard")
            else {
                note = "no mobile_app device named"
                return nil
            }
            guard let state = try? await rest.state(of: sensor.entityID) else { return nil }
            // The armed entity still shows the sentinel: nothing reported yet. An entity found only
            // now was registered by this launch.
            if sensor.entityID == armedEntity && state.state == sentinel {
                note = "\(sensor.entityID) has not been reported since the launch for"
                return nil
            }
            if let unarmed, unarmed.entity == sensor.entityID, unarmed.lastUpdated == state.lastUpdated {
                note = "\(sensor.entityID) has not been reported since the launch for"
                return nil
            }
            if ["unavailable", "unknown"].contains(state.state) { return nil }
            return state.state
        }

        func status() async -> String {
            "\(note) '\(deviceName)'"
        }
    }
}
