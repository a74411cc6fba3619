import Foundation
import HomeAssistant
import Logging

/// One launch of the virtual HA Dashboard app (see ``VirtualHADashboardApp`` for what it mirrors).
final class AppSession: Sendable {
    static let appID = "io.hadashboard.app"
    let launch: VirtualHADashboardLaunch
    let screen: @Sendable (VirtualScreen) -> Void
    let log: AppLogFile
    private let state: LockedState

    /// What the app keeps across the launch in memory (NSUserDefaults' app domain and the keychain).
    final class LockedState: @unchecked Sendable {
        let lock = NSLock()
        var defaults: AppDefaults
        var keychain: AppKeychain
        init(defaults: AppDefaults, keychain: AppKeychain) {
            self.defaults = defaults
            self.keychain = keychain
        }
        func with<T>(_ body: (inout AppDefaults, inout AppKeychain) -> T) -> T {
            lock.withLock { body(&defaults, &keychain) }
        }
    }

    init(launch: VirtualHADashboardLaunch, screen: @escaping @Sendable (VirtualScreen) -> Void) {
        self.launch = launch
        self.screen = screen
        let defaults = AppDefaults(
            arguments: launch.arguments, file: launch.preferences, fileSystem: launch.fileSystem)
        let level = defaults.has("HALogMinLevel") ? defaults.integer("HALogMinLevel") : 1
        log = AppLogFile(
            documents: launch.dataContainer.appendingPathComponent("Documents"), model: launch.model,
            systemVersion: launch.systemVersion, minimum: AppLogFile.Level(rawValue: level) ?? .info,
            fileSystem: launch.fileSystem)
        state = LockedState(
            defaults: defaults, keychain: AppKeychain(file: launch.keychain, fileSystem: launch.fileSystem))
    }

    var kiosk: Bool { state.with { defaults, _ in defaults.bool("ha_kiosk_mode") } }

    /// HAAppDelegate.m (a3120aa): applied once, then removed from the defaults.
    static let bootstrapKeys = [
        "HAClearCredentials", "HAServerURL", "HAAccessToken", "HADashboard", "HAKioskMode", "HAThemeMode",
        "HAGradientEnabled", "HADemoMode", "HAAutoRegister",
    ]

    func show(_ lines: [String], error: Bool = false) {
        screen(VirtualScreen(title: launch.displayName, lines: lines, isError: error, kiosk: kiosk))
    }

    // MARK: didFinishLaunching

    func run() async {
        log.info("log", "Crash handler installed")
        log.startup("didFinishLaunching START")
        log.info("startup", "App version: \(launch.version) (\(launch.build))")
        log.startup("NSUserDefaults read BEGIN")
        let settings = state.with {
            defaults, keychain -> (configured: Bool, autoRegister: Bool, demo: Bool) in
            if defaults.bool("HAClearCredentials") {
                log.startup("HAClearCredentials=YES — wiping keychain")
                for key in ["ha_server_url", "ha_access_token", "ha_auth_mode", "ha_refresh_token"] {
                    keychain[key] = nil
                }
                for key in [
                    "ha_selected_dashboard", "ha_kiosk_mode", "ha_demo_mode", "ha_auto_reload_dashboard",
                ] {
                    defaults.set(nil, for: key)
                }
            }
            let url = defaults.string("HAServerURL") ?? ""
            let token = defaults.string("HAAccessToken") ?? ""
            log.info(
                "startup",
                "NSUserDefaults read END (url=\(url.isEmpty ? "NO" : "YES"), token=\(token.isEmpty ? "NO" : "YES"))"
            )
            if !url.isEmpty && !token.isEmpty {
                log.startup("saveServerURL BEGIN")
                keychain["ha_server_url"] = Self.normalized(url)
                keychain["ha_access_token"] = token
                log.startup("saveServerURL END")
            }
            if let dashboard = defaults.string("HADashboard") {
                defaults.set(dashboard.isEmpty ? nil : dashboard, for: "ha_selected_dashboard")
            }
            if defaults.has("HAKioskMode") {
                defaults.set(defaults.bool("HAKioskMode"), for: "ha_kiosk_mode")
            }
            if defaults.has("HADemoMode") { defaults.set(defaults.bool("HADemoMode"), for: "ha_demo_mode") }
            let autoRegister = defaults.bool("HAAutoRegister")
            if autoRegister { defaults.set(true, for: "HADeviceIntegration_enabled") }
            let demo = defaults.bool("ha_demo_mode")
            // As 1.3 does: the bootstrap keys are used once and removed from the app's own domain (a
            // relaunch without them reads the keychain and the settings it saved).
            for key in Self.bootstrapKeys { defaults.set(nil, for: key) }
            let configured =
                demo
                || (!(keychain["ha_server_url"] ?? "").isEmpty
                    && !(keychain["ha_access_token"] ?? "").isEmpty)
            try? defaults.save()
            try? keychain.save()
            return (configured, autoRegister, demo)
        }
        if settings.autoRegister {
            if state.with({ _, keychain in keychain["ha_webhook_id"] }) != nil {
                log.info("startup", "HAAutoRegister: already registered")
            } else {
                log.info("startup", "HAAutoRegister: triggering device registration")
                await register()
            }
        }
        log.startup("isConfigured check BEGIN")
        log.info("startup", "isConfigured=\(settings.configured ? "YES" : "NO")")
        log.startup(
            settings.configured ? "Creating HADashboardViewController" : "Creating HALoginViewController")
        log.startup("didFinishLaunching END")
        guard settings.configured else {
            show(["Connect to Home Assistant", "", "Server URL", "Access token", "", "(login screen)"])
            return await stayInForeground()
        }
        if settings.demo {
            log.info("conn", "Loading demo data")
            show(["Demo dashboard", "", "Living Room: 6 cards", "Kitchen: 4 cards", "", "(demo mode)"])
            return await stayInForeground()
        }
        await connectLoop()
        await stayInForeground()
    }

    private func stayInForeground() async {
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(3600))
        }
    }

    /// HAAuthManager's URL normalisation: no trailing slash.
    static func normalized(_ url: String) -> String {
        var result = url.trimmingCharacters(in: .whitespaces)
        while result.hasSuffix("/") { result.removeLast() }
        return result
    }

    private var credentials: (url: String, token: String)? {
        state.with { _, keychain in
            guard let url = keychain["ha_server_url"], let token = keychain["ha_access_token"] else {
                return nil
            }
            return (url, token)
        }
    }

    private func options(_ server: ServerAddress, _ token: String) -> ClientOptions {
        var logger = Logger(label: "virtual-app")
        logger.logLevel = .critical
        let seconds = Duration.milliseconds(Int64(launch.options.requestSeconds * 1000))
        return ClientOptions(
            server: server, token: AccessToken(token), clock: EmulatorClock.wallClock,
            connectTimeout: seconds,
            requestTimeout: seconds,
            reconnect: .never, logger: logger)
    }

    // MARK: HAConnectionManager

    /// Connects until it stays connected, with the app's reconnect backoff.
    private func connectLoop() async {
        guard let (url, token) = credentials, let server = try? ServerAddress(url) else {
            log.warn("conn", "Cannot connect — not configured")
            return show(["Invalid server URL"], error: true)
        }
        var attempt = 0
        while !Task.isCancelled {
            let selected = state.with { defaults, _ in defaults.string("ha_selected_dashboard") }
            show(["Connecting to", server.baseURL, "Dashboard: \(selected ?? "default")"])
            let connection = HomeAssistantConnection(options: options(server, token))
            do {
                try await connection.connect()
                log.info("conn", "WebSocket connected, awaiting auth...")
                if let version = await connection.haVersion {
                    log.info("conn", "Home Assistant version: \(version)")
                }
                log.info("conn", "WebSocket authenticated")
                await connected(connection, server: server, token: token, selected: selected)
                return
            } catch let error as HomeAssistantError {
                await connection.close()
                switch error.kind {
                case .tokenRefused:
                    log.info("conn", "WebSocket connected, awaiting auth...")
                    log.warn("conn", "auth_invalid — attempting token refresh")
                    log.error("conn", "Auth failed: Authentication failed")
                    log.warn(
                        "conn",
                        "WebSocket disconnected: Error Domain=HAAuthManager Code=401 \"Authentication failed\" "
                            + "UserInfo={NSLocalizedDescription=Authentication failed}")
                    show(["Authentication failed", "The access token was refused"], error: true)
                default:
                    log.warn(
                        "conn",
                        "WebSocket disconnected: Error Domain=NSPOSIXErrorDomain Code=61 \"Could not connect to the server.\""
                    )
                    show(["Cannot reach Home Assistant", server.baseURL], error: true)
                }
            } catch {
                await connection.close()
                return
            }
            attempt += 1
            let delay = min(
                launch.options.reconnectSeconds * pow(2, Double(attempt - 1)),
                launch.options.maximumReconnectSeconds)
            log.info("conn", "Reconnecting in \(Int(delay.rounded()))s (attempt \(attempt))")
            try? await Task.sleep(for: .milliseconds(Int64(delay * 1000)))
        }
    }

    private func connected(
        _ connection: HomeAssistantConnection, server: ServerAddress, token: String, selected: String?
    ) async {
        let integration = await startIntegration(server: server, token: token)
        let rest = try? HomeAssistantREST(options: options(server, token))
        defer { Task { try? await rest?.shutdown() } }
        let states = (try? await rest?.states()) ?? []
        do {
            let config = try await connection.lovelaceConfig(urlPath: selected)
            let shape = LovelaceShape(config)
            log.info(
                "conn",
                "Lovelace config received: \(shape.views) views, \(shape.cards) cards, strategy=\(shape.strategy ?? "none")"
            )
            if let strategy = shape.strategy { log.info("conn", "Strategy dashboard detected: \(strategy)") }
            log.info("conn", "REST /api/states complete — \(states.count) entities")
            log.info("dash", "Received Lovelace config: \(shape.views) views")
            show(DashboardScreen.lines(config: config, dashboard: selected, states: states))
        } catch let error as HomeAssistantError {
            if case .commandFailed(let code) = error.kind {
                log.error(
                    "conn",
                    "Lovelace config fetch failed: {\n    code = \"\(code)\";\n    message = \"\(Self.serverMessage(error))\";\n}"
                )
                log.info("conn", "REST /api/states complete — \(states.count) entities")
                if code == "config_not_found" {
                    log.info("conn", "No Lovelace config — using original-states strategy")
                    show(DashboardScreen.generated(dashboard: selected, states: states))
                } else {
                    log.warn("dash", "Lovelace fetch failed, falling back to default entity dashboard")
                    show(DashboardScreen.generated(dashboard: selected, states: states))
                }
            } else {
                log.warn("conn", "WebSocket disconnected: \(error.message)")
                show(["Home Assistant error", error.message], error: true)
                await connection.close()
                return
            }
        } catch {
            await connection.close()
            return
        }
        // HAConnectionManagerDidReceiveLovelaceNotification → the sensor reporter.
        if let integration { await integration.report(["active_dashboard"]) }
        if launch.options.sendsLoadedEvent {
            let data: [String: JSONValue] = [
                "deploy_id": .string(state.with { defaults, _ in defaults.string("HADeployID") } ?? ""),
                "device": .string(
                    state.with { defaults, _ in defaults.string("HADeviceID") } ?? launch.deviceName),
                "dashboard": selected.map(JSONValue.string) ?? .null,
                "version": .string(launch.version), "build": .string(launch.build), "kiosk": .bool(kiosk),
            ]
            _ = try? await connection.fireEvent(DashboardLoadedEvent.eventType, data: data)
        }
        while !Task.isCancelled {
            try? await Task.sleep(for: .seconds(3600))
        }
        await connection.close()
    }

    /// The `message` Home Assistant sent with a failed command (the client wraps it in its own words).
    static func serverMessage(_ error: HomeAssistantError) -> String {
        if let code = error.code, let range = error.message.range(of: code + ": ", options: .backwards) {
            return String(error.message[range.upperBound...])
        }
        return error.message
    }

    // MARK: HADeviceRegistration / HADeviceIntegrationManager

    private func registrationBody() -> [String: JSONValue] {
        let deviceID = state.with { _, keychain -> String in
            if let id = keychain["ha_device_id"] { return id }
            let id = UUID().uuidString
            keychain["ha_device_id"] = id
            try? keychain.save()
            return id
        }
        return [
            "device_id": .string(deviceID), "app_id": .string(Self.appID), "app_name": "HA Dashboard",
            "app_version": .string(launch.version), "device_name": .string(launch.deviceName),
            "manufacturer": "Apple", "model": .string(launch.machine), "os_name": "iOS",
            "os_version": .string(launch.systemVersion), "supports_encryption": false,
            "app_data": [
                "push_url": "https://mobile-apps.home-assistant.io/api/sendPush/ios",
                "push_token": "websocket-local-push",
            ],
        ]
    }

    private func register() async {
        guard let (url, token) = credentials, let server = try? ServerAddress(url) else {
            log.error(
                "startup", "HAAutoRegister: registration failed: Not configured — no server URL or token")
            return
        }
        guard let rest = try? HomeAssistantREST(options: options(server, token)) else { return }
        defer { Task { try? await rest.shutdown() } }
        do {
            let registration = try await rest.registerMobileApp(registrationBody())
            state.with { _, keychain in
                keychain["ha_webhook_id"] = registration.webhookID
                try? keychain.save()
            }
            log.info("device", "Registered with webhook_id: \(registration.webhookID)")
            log.info("startup", "HAAutoRegister: registration succeeded")
        } catch let error as HomeAssistantError {
            let reason =
                error.kind == .tokenRefused ? "Registration failed: HTTP 401" : Self.serverMessage(error)
            log.error("startup", "HAAutoRegister: registration failed: \(reason)")
        } catch {
            log.error("startup", "HAAutoRegister: registration failed: \(error)")
        }
    }

    /// Starts the sensor reporter when the integration is on and registered (on connect).
    private func startIntegration(server: ServerAddress, token: String) async -> AppSensorReporter? {
        let (enabled, webhook) = state.with { defaults, keychain in
            (defaults.bool("HADeviceIntegration_enabled"), keychain["ha_webhook_id"])
        }
        guard enabled, let webhook, let rest = try? HomeAssistantREST(options: options(server, token)) else {
            return nil
        }
        let reporter = AppSensorReporter(
            rest: rest, webhookID: webhook, log: log,
            values: { [launch, state] key in
                switch key {
                case "active_dashboard":
                    let path = state.with { defaults, _ in defaults.string("ha_selected_dashboard") } ?? ""
                    return .string(path.isEmpty ? "default" : path)
                case "app_state": return "Active"
                case "last_update_trigger": return "launch"
                case "device_model": return .string(launch.machine)
                case "battery_level": return .number(-1)
                case "battery_state": return "Unknown"
                case "screen_brightness": return .number(100)
                case "storage_available": return .number(12.5)
                case "connection_type": return "WiFi"
                default: return "Unknown"
                }
            },
            gone: { [state] in
                state.with { _, keychain in
                    keychain["ha_webhook_id"] = nil
                    try? keychain.save()
                }
            })
        await reporter.start()
        return reporter
    }
}
