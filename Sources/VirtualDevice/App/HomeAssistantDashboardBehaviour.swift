import Foundation
import HomeAssistant
import Logging

/// Acts like the HA Dashboard app (README "The dashboard-loaded contract"): with
/// `-HAServerURL -HAAccessToken -HADashboard|-HADefaultDashboard -HAKioskMode -HADeployID -HADeviceID`
/// it connects to Home Assistant over the WebSocket API, authenticates, loads the dashboard
/// (`lovelace/config` with `url_path`), shows it, then fires `ha_dashboard_loaded` with
/// `{deploy_id, device, dashboard, version, build, kiosk}`. A refused token, a missing dashboard or an
/// unreachable server are shown on the screen as errors and fire nothing.
public struct HomeAssistantDashboardBehaviour: VirtualAppBehaviour {
    /// Deadline for connecting and authenticating.
    public var connectTimeout: Duration
    /// Deadline for each request (dashboard config, fire_event).
    public var requestTimeout: Duration
    public var logger: Logger

    public init(
        connectTimeout: Duration = .seconds(15), requestTimeout: Duration = .seconds(15),
        logger: Logger = Logger(label: "virtual-app")
    ) {
        self.connectTimeout = connectTimeout
        self.requestTimeout = requestTimeout
        self.logger = logger
    }

    public func run(_ launch: VirtualAppLaunch, context: VirtualAppContext) async {
        let kiosk = launch.argument("HAKioskMode")?.uppercased() == "YES"
        let dashboard: String? =
            launch.argument("HADefaultDashboard")?.uppercased() == "YES"
            ? nil : launch.argument("HADashboard")
        let dashboardLabel = dashboard ?? "default dashboard"
        func fail(_ lines: [String]) {
            context.show(VirtualScreen(title: launch.displayName, lines: lines, isError: true, kiosk: kiosk))
            context.print("HADashboard: error: " + lines.joined(separator: " "))
        }
        guard let url = launch.argument("HAServerURL"), let tokenValue = launch.argument("HAAccessToken")
        else {
            return fail(["Not configured", "Launch with -HAServerURL and -HAAccessToken"])
        }
        let server: ServerAddress
        do {
            server = try ServerAddress(url)
        } catch {
            return fail(["Invalid server URL", url])
        }
        context.show(
            VirtualScreen(
                title: launch.displayName,
                lines: ["Connecting to", server.baseURL, "Dashboard: \(dashboardLabel)"],
                kiosk: kiosk))
        context.print("HADashboard: connecting to \(server.baseURL)")
        let options = ClientOptions(
            server: server, token: AccessToken(tokenValue), connectTimeout: connectTimeout,
            requestTimeout: requestTimeout, reconnect: .never, logger: logger)
        let connection = HomeAssistantConnection(options: options)
        do {
            try await connection.connect()
            // The default dashboard that was never saved is the one Home Assistant generates: the
            // app shows it like the frontend does.
            var config: LovelaceConfig?
            do {
                config = try await connection.lovelaceConfig(urlPath: dashboard)
            } catch let error as HomeAssistantError
                where dashboard == nil && error.kind == .commandFailed(code: "config_not_found")
            {
                config = nil
            }
            let version = await connection.haVersion
            context.show(
                Self.dashboardScreen(launch, config: config, label: dashboardLabel, kiosk: kiosk, ha: version)
            )
            let data: [String: JSONValue] = [
                "deploy_id": .string(launch.argument("HADeployID") ?? ""),
                "device": .string(launch.argument("HADeviceID") ?? launch.deviceName),
                "dashboard": dashboard.map(JSONValue.string) ?? .null,
                "version": .string(launch.version),
                "build": .string(launch.build),
                "kiosk": .bool(kiosk),
            ]
            try await connection.fireEvent(DashboardLoadedEvent.eventType, data: data)
            context.print("HADashboard: loaded \(dashboardLabel)")
        } catch let error as HomeAssistantError {
            await connection.close()
            switch error.kind {
            case .tokenRefused: return fail(["Authentication failed", "The access token was refused"])
            case .commandFailed(let code) where code == "config_not_found":
                return fail(["Dashboard not found", dashboardLabel])
            case .unreachable, .timedOut: return fail(["Cannot reach Home Assistant", server.baseURL])
            default: return fail(["Home Assistant error", String(describing: error.kind)])
            }
        } catch {
            await connection.close()
            return fail(["Unexpected error", "\(type(of: error))"])
        }
        // The app stays in the foreground until it is killed (task cancelled).
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(3600))
        }
        await connection.close()
    }

    static func dashboardScreen(
        _ launch: VirtualAppLaunch, config: LovelaceConfig?, label: String, kiosk: Bool, ha: String?
    ) -> VirtualScreen {
        let title = config?.value["title"]?.stringValue ?? label
        var lines = ["Dashboard: \(label)", title, ""]
        for view in (config?.views ?? []).prefix(8) {
            let name = view["title"]?.stringValue ?? view["path"]?.stringValue ?? "view"
            let cards = view["cards"]?.arrayValue?.count ?? 0
            lines.append("\(name): \(cards) card\(cards == 1 ? "" : "s")")
        }
        if config?.isStrategy ?? true { lines.append("(generated dashboard)") }
        lines.append("")
        lines.append("Home Assistant \(ha ?? "")")
        lines.append("App \(launch.version) (\(launch.build))\(kiosk ? " kiosk" : "")")
        return VirtualScreen(title: launch.displayName, lines: lines, isError: false, kiosk: kiosk)
    }
}
