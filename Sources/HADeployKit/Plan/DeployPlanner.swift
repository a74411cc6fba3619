import DeployModel
import DeviceSpec
import HADeployBuild
import HADeployCore
import HADeployDrivers
import HomeAssistant
import Versioning

/// `--server` or HA_SERVER is not a usable Home Assistant URL.
public struct InvalidServerURL: Error, CustomStringConvertible, ExitStatusProviding {
    public var fromCommandLine: Bool
    public var detail: String

    public var description: String {
        "\(fromCommandLine ? "--server" : "HA_SERVER (.env or the environment)"): \(detail)"
    }

    public var exitStatus: ExitStatus { fromCommandLine ? .usage : .config }
}

/// Turns command-line options, the matrix, `.env` values, the version and the topology into a
/// `DeployPlan`. Pure: no files, processes or clock — everything comes in as parameters. What it
/// returns is exactly what runs: the executor never rewrites it.
public struct DeployPlanner: Sendable {
    public var matrix: DeviceMatrix
    /// `.env` merged with the environment (the environment wins).
    public var variables: [String: String]
    public var topology: Topology
    /// Where this run keeps its files and finds its tools (resolved by the caller: the planner reads no files).
    public var paths: HostPaths

    public init(
        matrix: DeviceMatrix, variables: [String: String], topology: Topology, paths: HostPaths = HostPaths()
    ) {
        self.matrix = matrix
        self.variables = variables
        self.topology = topology
        self.paths = paths
    }

    var host: HostPlatform { topology.host }

    public func plan(options: DeployOptions, version: GitVersion, deployID: String) throws -> DeployPlan {
        let devices = try TargetResolver(matrix: matrix).resolve(options.targets)
        var warnings: [String] = []
        let server: ConfigValue.Resolution =
            options.server.map { .value($0) } ?? nonEmpty(variables["HA_SERVER"]).map { .value($0) }
            ?? .unset(["HA_SERVER"])
        // The token is named, never held: `--token` reaches the run as HA_TOKEN (see `DeploySession`).
        let token: ConfigValue.Resolution =
            options.token != nil || nonEmpty(variables["HA_TOKEN"]) != nil
            ? .value("env:HA_TOKEN") : .unset(["HA_TOKEN"])

        // Virtual twins without a Home Assistant still show the whole pipeline; the check is skipped.
        let haConfigured = server.value != nil && token.value != nil
        var skipped: String?
        if !options.verify {
            skipped = "verification skipped (--no-verify)"
            warnings.append("--no-verify: the dashboard check is skipped; results will say so")
        } else if options.reset {
            skipped = "verification skipped: --reset clears the app's server and token"
        } else if options.demo {
            skipped = "verification skipped: --demo shows the app's demo data"
        } else if topology.virtual != nil && !haConfigured {
            skipped = "verification skipped: HA_SERVER and HA_TOKEN are not both set"
        }
        if let skipped, options.verify { warnings.append(skipped) }
        let verify = skipped == nil
        // Without the check, a missing server or token is not sent: the app keeps the ones it has.
        let sendsCredentials = !options.reset && !options.demo && (verify || haConfigured)
        if !sendsCredentials && !haConfigured && !options.reset && !options.demo {
            warnings.append("HA_SERVER/HA_TOKEN not set: the app keeps the server and token it has")
        }
        // The URL reaches the app's launch arguments and the checks' requests: refused now when it is
        // not one (a CR or LF in it, port 0 or 99999), before any device is touched.
        if let url = server.value, verify || sendsCredentials {
            do {
                _ = try ServerAddress(url)
            } catch {
                throw InvalidServerURL(fromCommandLine: options.server != nil, detail: "\(error)")
            }
        }
        let context = Context(
            options: options, server: server, token: token, deployID: deployID, version: version,
            verify: verify, needsHomeAssistant: sendsCredentials)
        let devicePlans = try devices.map { try plan($0, context) }

        let commands = BuildCommandBuilder.resolved(variables: variables, version: version)
        var builds: [BuildPlan] = []
        for flavour in matrix.flavours {
            let users = devicePlans.filter { $0.flavour == flavour.name && $0.availability == .available }
            guard !users.isEmpty else { continue }
            builds.append(
                BuildPlan(
                    flavour: flavour.name,
                    xcode: flavour.xcode?.display(variables) ?? "(default Xcode)",
                    archs: flavour.archs.map(\.rawValue),
                    deploymentTarget: flavour.deploymentTarget, sdk: flavour.sdk,
                    configuration: flavour.configuration, devices: users.map(\.id), enabled: options.build,
                    location: location(flavour, commands: commands),
                    commands: options.build ? commands.commands(flavour) : [],
                    // A flavour none of whose devices can be deployed (each lacks a setting) is not
                    // built by a deploy.
                    deployable: users.contains(where: \.unsetKeys.isEmpty))
            )
        }
        var result = DeployPlan(
            version: version, deployID: deployID, server: server,
            accessToken: token.value == nil ? nil : SecretReference(environment: "HA_TOKEN"),
            verify: verify,
            verificationSkipped: skipped, builds: builds,
            devices: devicePlans, warnings: warnings)
        result.caFile = nonEmpty(variables["HA_CA_FILE"])
        // Given artifacts (or the twins' demo bundles) win; else a build, when there is one.
        result.artifacts = options.artifacts == .nothing && options.build ? .build : options.artifacts
        result.stateDirectory = paths.stateDirectory
        result.project = options.project
        let available = devicePlans.filter { $0.availability == .available }
        if verify {
            let named = available.compactMap(\.dashboard.expected)
            result.preflight = named.isEmpty ? [nil] : named
        }
        if available.contains(where: { if case .usbHost? = $0.backend.usbRoute { true } else { false } }) {
            result.usbHostLogin = HostLogin(
                login: nonEmpty(variables["USB_HOST_SSH_KEY"]).map { .key(path: $0) } ?? .agent,
                knownHosts: SSHLogin.knownHostsPath(variables))
        }
        return result
    }

    /// Where a flavour builds — the one place it is decided: here when an xcodebuild is named
    /// (HADEPLOY_XCODEBUILD) or this Mac has the flavour's Xcode; else on `build_host:`; else nowhere.
    func location(_ flavour: Flavour, commands: BuildCommandBuilder) -> BuildLocation {
        let here: Bool
        if commands.tools["xcodebuild"] != nil {
            here = true
        } else if host != .macOS {
            here = false
        } else if let developer = commands.developerDirectory(flavour),
            let installed = paths.installedDeveloperDirectories
        {
            here = installed.contains(developer)
        } else {
            here = true
        }
        if here { return .here }
        return nonEmpty(matrix.buildHost?.resolve(variables).value).map { .buildHost($0) } ?? .nowhere
    }

    struct Context {
        var options: DeployOptions
        var server: ConfigValue.Resolution
        var token: ConfigValue.Resolution
        var deployID: String
        var version: GitVersion
        var verify: Bool
        /// The launch carries a server and token (not --reset, --demo, or twins without HA).
        var needsHomeAssistant: Bool
    }

    func nonEmpty(_ value: String?) -> String? {
        guard let value, !value.isEmpty else { return nil }
        return value
    }

    var planning: BackendPlanning {
        BackendPlanning(matrix: matrix, variables: variables, topology: topology, paths: paths)
    }

    func plan(_ device: Device, _ context: Context) throws -> DevicePlan {
        var unset: [String] = []
        let options = context.options
        var udid = device.udid?.resolve(variables)
        var host = Backends.word(of: device)?.needsHost == true ? device.host?.resolve(variables) : nil
        let planning = self.planning
        let (backend, choice) = Backends.choose(device, planning)
        let availability = choice.availability
        if let twins = topology.virtual {
            if twins.jailbroken[device.id] != nil {
                host = .value("127.0.0.1")
                udid = nil
            } else {
                // A twin stands in for the device: its UDID, not the one devices.yaml names (unset or not).
                udid = twins.udids[device.id].map { .value($0) }
            }
        } else {
            unset += udid?.unsetNames ?? []
            unset += host?.unsetNames ?? []
        }

        let dashboard: DashboardTarget
        switch options.dashboard {
        case .named(let name): dashboard = .named(name)
        case .appDefault: dashboard = .appDefault
        case .unspecified:
            // `dashboard: ""` in devices.yaml means what it means to the app: the default dashboard.
            if let configured = device.dashboard {
                dashboard = configured.isEmpty ? .appDefault : .named(configured)
            } else {
                dashboard = nonEmpty(variables["HA_DASHBOARD"]).map { .named($0) } ?? .unchanged
            }
        }
        let kiosk = options.kiosk ?? device.kiosk

        let credentials: LaunchSettings.Credentials
        if options.reset {
            credentials = .clear
        } else if options.demo {
            credentials = .demo
        } else if context.needsHomeAssistant {
            unset += context.server.unsetNames + context.token.unsetNames
            credentials = .homeAssistant(
                server: context.server, token: SecretReference(environment: "HA_TOKEN"))
        } else {
            credentials = .keep
        }
        // The deploy id and the device's id are echoed back in ha_dashboard_loaded, so an event is
        // matched to this deploy and this device.
        let launch = LaunchSettings(
            credentials: credentials, dashboard: dashboard, kiosk: kiosk, autoRegister: device.haIntegration,
            appSettings: device.appSettings, deployID: device.loadedEvent ? context.deployID : nil,
            deviceID: device.loadedEvent ? device.id : nil)

        let verification = VerificationPlan(
            appLog: true, homeAssistant: device.haIntegration, homeAssistantDevice: device.haDevice,
            loadedEvent: device.loadedEvent, timeout: device.verificationTimeout)
        let steps =
            availability == .available
            ? Backends.steps(
                backend, device, verification: verification, verify: context.verify,
                screenshots: options.screenshots) : []
        var seen = Set<String>()
        return DevicePlan(
            id: device.id, name: device.name, kind: device.kind, transport: device.transport,
            backend: try Backends.planned(
                backend, choice, device, planning, udid: udid?.value, host: host?.value),
            productType: device.productType, ios: device.iosVersion, arch: device.arch.rawValue,
            flavour: device.flavour, udid: udid, host: host,
            verification: verification, timeouts: device.timeouts, launch: launch, force: options.force,
            steps: steps,
            unsetKeys: availability == .available ? unset.filter { seen.insert($0).inserted } : [],
            availability: availability)
    }

    /// The one place transport × host × topology is decided: the first backend that takes the device.
    public func backend(_ device: Device) -> (backend: AnyBackend, choice: BackendChoice, description: String)
    {
        let (backend, choice) = Backends.choose(device, planning)
        let udid = device.udid?.resolve(variables).value
        let host = device.host?.resolve(variables).value
        let described =
            (try? Backends.planned(backend, choice, device, planning, udid: udid, host: host))
            .map(Backends.describe) ?? backend.kind
        return (backend, choice, described)
    }
}
