import HADeployCore

/// Checks, before a deploy, that the app will find what it needs: the server answers, the token is
/// accepted, the dashboard exists, and every entity its config references exists.
///
/// Never throws: every failure becomes an issue in the report, with the URL tried and the error.
public struct Preflight: Sendable {
    public let options: ClientOptions

    public init(options: ClientOptions) {
        self.options = options
    }

    /// Opens its own connection (no reconnect), checks, closes.
    public func run(dashboard: DashboardSelection) async -> PreflightReport {
        let clock = options.clock
        let start = clock.instant()
        var once = options
        once.reconnect = .never
        let connection = HomeAssistantConnection(options: once)
        var report = PreflightReport(
            server: options.server.baseURL, webSocketURL: options.server.webSocketURL)
        do {
            try await connection.connect()
            report = await Self.check(on: connection, dashboard: dashboard)
        } catch let error as HomeAssistantError {
            switch error.kind {
            case .tokenRefused:
                report.reachable = true
                report.issues.append(PreflightIssue(.error, code: "token_refused", message: error.message))
            case .timedOut:
                report.issues.append(PreflightIssue(.error, code: "timed_out", message: error.message))
            default:
                report.issues.append(PreflightIssue(.error, code: "unreachable", message: error.message))
            }
        } catch {
            report.issues.append(PreflightIssue(.error, code: "unreachable", message: "\(error)"))
        }
        await connection.close()
        report.passed = report.errors.isEmpty
        report.durationSeconds = clock.elapsed(since: start).seconds
        return report
    }

    /// Checks on a connection that is already open (its owner closes it).
    public static func check(on connection: HomeAssistantConnection, dashboard: DashboardSelection) async
        -> PreflightReport
    {
        let options = connection.options
        let clock = options.clock
        let start = clock.instant()
        var report = PreflightReport(
            server: options.server.baseURL, webSocketURL: options.server.webSocketURL)
        report.reachable = true
        report.tokenAccepted = true
        report.homeAssistantVersion = await connection.haVersion
        // A server that authenticates and then answers nothing (its event loop stuck, paused, or
        // still starting) would otherwise cost every request's full deadline and read as a missing
        // dashboard: a ping says it plainly, within the connect deadline.
        let deadline = options.connectTimeout
        do {
            _ = try await connection.send(PingRequest(), timeout: deadline)
        } catch let error as HomeAssistantError where error.kind == .timedOut {
            report.issues.append(
                PreflightIssue(
                    .error, code: "stalled",
                    message:
                        "Home Assistant at \(options.server.baseURL) accepted the connection and the token, "
                        + "then stopped answering (no reply to a ping within \(deadline.secondsText)): it is "
                        + "stalled (still starting, overloaded, or stuck). Check its log or restart it, then "
                        + "try again"))
            report.passed = false
            report.durationSeconds = clock.elapsed(since: start).seconds
            return report
        } catch {
            report.issues.append(PreflightIssue(.error, code: issueCode(error), message: "\(error)"))
            report.passed = false
            report.durationSeconds = clock.elapsed(since: start).seconds
            return report
        }
        if dashboard != .none {
            await checkDashboard(dashboard, on: connection, into: &report)
        }
        report.passed = report.errors.isEmpty
        report.durationSeconds = clock.elapsed(since: start).seconds
        return report
    }

    private static func checkDashboard(
        _ selection: DashboardSelection, on connection: HomeAssistantConnection,
        into report: inout PreflightReport
    ) async {
        var check = DashboardCheck(urlPath: selection.urlPath)
        // Three commands in flight at once: one round trip instead of three.
        async let configReply = capture { try await connection.lovelaceConfig(urlPath: selection.urlPath) }
        async let listReply = capture { try await connection.dashboards() }
        async let statesReply = capture { try await connection.send(EntityIDsRequest()) }
        let (config, list, states) = await (configReply, listReply, statesReply)

        if case .success(let dashboards) = list {
            check.availableDashboards = dashboards.map(\.urlPath).sorted()
        }
        let existing =
            check.availableDashboards.isEmpty
            ? "no other dashboards exist besides the default one (use --default)"
            : "the dashboards that exist are: \(check.availableDashboards.joined(separator: ", ")) "
                + "(and the default one, --default)"

        var parsedConfig: LovelaceConfig?
        switch config {
        case .success(let value):
            check.exists = true
            check.saved = true
            parsedConfig = value
        case .failure(let error as HomeAssistantError) where error.code == "config_not_found":
            // Same code for "no such dashboard" and "never saved"; only the message differs.
            if error.message.contains("Unknown config specified") {
                report.issues.append(
                    PreflightIssue(
                        .error, code: "dashboard_not_found",
                        message: "\(selection.displayName) does not exist on \(report.server): \(existing)"))
            } else {
                check.exists = true
                report.issues.append(
                    PreflightIssue(
                        .warning, code: "dashboard_not_saved",
                        message:
                            "\(selection.displayName) exists on \(report.server) but was never saved, so "
                            + "Home Assistant shows an auto-generated one: open it in Home Assistant, "
                            + "take control and save it; its entities were not checked"))
            }
        case .failure(let error):
            report.issues.append(PreflightIssue(.error, code: issueCode(error), message: "\(error)"))
        }

        var entityIDs: Set<String>?
        switch states {
        case .success(let ids):
            report.entityCount = ids.count
            entityIDs = Set(ids)
        case .failure(let error):
            report.issues.append(PreflightIssue(.error, code: issueCode(error), message: "\(error)"))
        }

        if let parsedConfig {
            if case .string = parsedConfig.value {
                report.issues.append(
                    PreflightIssue(
                        .warning, code: "dashboard_not_parsed",
                        message:
                            "\(selection.displayName) is saved as raw YAML text; its entities were not checked"
                    ))
            }
            let references = EntityReferenceCollector.collect(from: parsedConfig.value)
            check.referencedEntities = references.count
            if let entityIDs {
                report.missingEntities = missing(references, among: entityIDs)
                for entity in report.missingEntities {
                    report.issues.append(
                        PreflightIssue(
                            .warning, code: "entity_missing",
                            message: "\(entity.entityID) is used by \(selection.displayName) at "
                                + "\(entity.usedAt.joined(separator: ", ")) but does not exist on \(report.server)"
                        ))
                }
            }
        }
        report.dashboard = check
    }

    static func missing(_ references: [EntityReference], among known: Set<String>) -> [MissingEntity] {
        var order: [String] = []
        var paths: [String: [String]] = [:]
        for reference in references where !known.contains(reference.entityID) {
            if paths[reference.entityID] == nil { order.append(reference.entityID) }
            if paths[reference.entityID]?.contains(reference.path) != true {
                paths[reference.entityID, default: []].append(reference.path)
            }
        }
        return order.map { MissingEntity(entityID: $0, usedAt: paths[$0] ?? []) }
    }

    private static func issueCode(_ error: any Error) -> String {
        guard let error = error as? HomeAssistantError else { return "request_failed" }
        switch error.kind {
        case .timedOut: return "timed_out"
        case .unreachable, .notConnected: return "unreachable"
        case .tokenRefused: return "token_refused"
        default: return "request_failed"
        }
    }
}

private func capture<T: Sendable>(_ body: @Sendable () async throws -> T) async -> Result<T, any Error> {
    do {
        return .success(try await body())
    } catch {
        return .failure(error)
    }
}
