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
        let devicePlans = devices.map { plan($0, context) }

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
        let available = devicePlans.filter { $0.availability == .available }
        if verify {
            let named = available.compactMap(\.dashboard.expected)
            result.preflight = named.isEmpty ? [nil] : named
        }
        // libusbmuxd reads one usbmuxd address per process: the first route runs here, the others in
        // worker processes, each handed its share of this result.
        var routes: [USBRoute] = []
        for device in available {
            if let route = device.backend.usbRoute, !routes.contains(route) { routes.append(route) }
        }
        result.workers = routes.dropFirst().map { route in
            WorkerShare(route: route, devices: available.filter { $0.backend.usbRoute == route }.map(\.id))
        }
        if routes.contains(where: { if case .usbHost = $0 { return true } else { return false } }) {
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

    func plan(_ device: Device, _ context: Context) -> DevicePlan {
        var unset: [String] = []
        let options = context.options
        var udid = device.udid?.resolve(variables)
        var host = device.transport == .ssh ? device.host?.resolve(variables) : nil
        let (backend, availability) = self.backend(device, udid: udid)
        if backend.isVirtualTwin {
            // A twin stands in for the device: its UDID, not the one devices.yaml names (unset or not).
            udid = topology.virtual?.udids[device.id].map { .value($0) }
        } else if topology.virtual?.jailbroken[device.id] != nil {
            host = .value("127.0.0.1")
            udid = nil
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
            ? self.steps(device, backend: backend, verification: verification, context: context) : []
        var seen = Set<String>()
        return DevicePlan(
            id: device.id, name: device.name, kind: device.kind, transport: device.transport,
            backend: backend,
            productType: device.productType, ios: device.iosVersion, arch: device.arch.rawValue,
            flavour: device.flavour, udid: udid, host: host, kiosk: kiosk, dashboard: dashboard,
            verification: verification, timeouts: device.timeouts, launch: launch, force: options.force,
            configuration: availability == .available
                ? configuration(device, backend: backend, udid: udid, host: host) : .none,
            steps: steps,
            unsetKeys: availability == .available ? unset.filter { seen.insert($0).inserted } : [],
            availability: availability)
    }

    /// The values the device's driver is built from: devices.yaml and `.env` resolved now, secrets by name.
    func configuration(
        _ device: Device, backend: DeviceBackend, udid: ConfigValue.Resolution?, host: ConfigValue.Resolution?
    ) -> DriverConfiguration {
        let state = paths.stateDirectory
        let home = nonEmpty(variables["HOME"]) ?? paths.home
        func usb() -> USBConfiguration {
            var images = paths.developerImages ?? []
            if paths.developerImages == nil, let path = device.ddiDir?.resolve(variables).value {
                images.append(HomePath.expand(path, variables))
            }
            return USBConfiguration(
                udid: udid?.value, developerImages: images, installRecords: state + "/install-records",
                network: backend.lookup == .network)
        }
        func simulator(tool: String?, scratch: String) -> SimulatorConfiguration {
            SimulatorConfiguration(
                udid: nonEmpty(udid?.value),
                // `${SIM_IPAD_NAME:-iPad (10th generation)}`: the old scripts' .env key, or the default.
                deviceType: device.simulatorDeviceType.map { ConfigValue($0).display(variables) },
                runtime: device.simulatorRuntime ?? "iOS \(device.iosVersion)",
                developerDir: developerDir(device.flavour), tool: tool, home: home,
                scratchDirectory: state + "/" + scratch)
        }
        switch backend {
        case .usb:
            return .usb(usb())
        case .ssh(let fallback):
            return .ssh(ssh(device, host: host), fallback: fallback == nil ? nil : usb())
        case .simctl:
            return .simctl(simulator(tool: nil, scratch: "simctl"))
        case .rosettaSim:
            // By name: the run resolves it (ROSETTASIM_CTL of its environment, `PlanTools`).
            let tool = nonEmpty(variables["ROSETTASIM_CTL"]).map { _ in "rosettasim-ctl" }
            return .rosettaSim(simulator(tool: tool, scratch: "rosettasim"))
        case .devicectl:
            return .devicectl(
                DevicectlConfiguration(
                    device: udid?.value ?? device.name, developerDir: developerDir(device.flavour),
                    scratchDirectory: state + "/devicectl"))
        case .pymobiledevice3:
            // By name: the run resolves it as `PlanTools` says (PYMOBILEDEVICE3, `.venv-pmd3`, PATH), so a
            // plan file names no path.
            return .pymobiledevice3(
                PyMobileDevice3Configuration(
                    executable: "pymobiledevice3", scratchDirectory: state + "/pymobiledevice3"),
                usb: usb())
        case .mac:
            return .mac(MacConfiguration(home: home))
        }
    }

    /// `<xcode>/Contents/Developer` for the flavour's Xcode, when it resolves.
    func developerDir(_ flavour: String) -> String? {
        guard let xcode = matrix.flavour(named: flavour)?.xcode,
            let path = nonEmpty(xcode.resolve(variables).value)
        else { return nil }
        let expanded = HomePath.expand(path, variables)
        return expanded.hasSuffix("/Contents/Developer") ? expanded : expanded + "/Contents/Developer"
    }

    /// A jailbroken device's login: its twin's when it has one (`--virtual`), else devices.yaml's —
    /// `password_env:`'s key (or the old scripts' spelling of it that is set), a key file, or the agent.
    func ssh(_ device: Device, host: ConfigValue.Resolution?) -> SSHConfiguration {
        let settings = device.ssh ?? SSHSettings()
        let work = paths.stateDirectory + "/ssh"
        if let twin = topology.virtual?.jailbroken[device.id] {
            return SSHConfiguration(
                host: "127.0.0.1", port: twin.port, user: settings.user, login: .key(path: twin.key),
                knownHosts: twin.knownHosts, legacyAlgorithms: false, commands: settings.commands,
                workDirectory: work)
        }
        let login: SSHLoginPlan
        if let key = settings.passwordEnv,
            let reference = SSHConfiguration.passwordReference(key, in: variables)
        {
            login = .password(reference)
        } else if let path = nonEmpty(settings.key?.resolve(variables).value) {
            login = .key(path: HomePath.expand(path, variables))
        } else {
            login = .agent
        }
        return SSHConfiguration(
            host: host?.value ?? "", port: settings.port, user: settings.user, login: login,
            knownHosts: SSHLogin.knownHostsPath(variables), legacyAlgorithms: settings.legacyAlgorithms,
            commands: settings.commands, workDirectory: work)
    }

    /// The one place transport × host × topology is decided.
    public func backend(_ device: Device, udid: ConfigValue.Resolution?) -> (DeviceBackend, Availability) {
        let local = USBRoute.local(address: topology.localUsbmuxd)
        let lookup: USBLookup = device.network ? .network : .usb
        if let twins = topology.virtual {
            if twins.jailbroken[device.id] != nil { return (.ssh(fallback: nil), .available) }
            // A network device's twin is a network twin: the same lookup reaches it.
            if twins.udids[device.id] != nil {
                // An iOS 17+ (devicectl) device's twin speaks the iOS 17.4 developer path: it is driven as
                // the real device is from Linux, through pymobiledevice3 (its userspace tunnel).
                if device.transport == .devicectl {
                    return (.pymobiledevice3(.virtual(address: twins.address)), .available)
                }
                return (.usb(.virtual(address: twins.address), lookup: lookup), .available)
            }
            let reason =
                twins.unavailable[device.id]
                ?? (device.kind == .simulator
                    ? "a simulator has no virtual twin (simulators need macOS)"
                    : device.transport == .mac
                        ? "the Mac has no virtual twin (the Mac Catalyst app runs on a macOS host)"
                        : "no virtual twin")
            return (.usb(.virtual(address: twins.address), lookup: lookup), .notOnThisHost(reason: reason))
        }
        let usbHost = device.usbHost.flatMap { nonEmpty($0.resolve(variables).value) }
        let route = usbHost.map { USBRoute.usbHost($0) } ?? local
        switch device.transport {
        case .usb:
            return (.usb(route, lookup: lookup), .available)
        case .ssh:
            let fallback = device.fallbackTransport == .usb && udid?.value != nil ? route : nil
            return (.ssh(fallback: fallback), .available)
        case .simctl:
            return (.simctl, host == .macOS ? .available : .notOnThisHost(reason: "xcrun simctl needs macOS"))
        case .rosettasim:
            return (
                .rosettaSim,
                host == .macOS ? .available : .notOnThisHost(reason: "rosettasim-ctl needs macOS")
            )
        case .devicectl:
            // On Linux an iOS 17+ device still installs over usbmuxd; launch needs pymobiledevice3.
            return (host == .macOS ? .devicectl : .pymobiledevice3(route), .available)
        case .mac:
            return (
                .mac,
                host == .macOS
                    ? .available
                    : .notOnThisHost(
                        reason: "the Mac Catalyst app runs on this machine only when it is a Mac")
            )
        }
    }

    func steps(
        _ device: Device, backend: DeviceBackend, verification: VerificationPlan, context: Context
    ) -> [PlanStep] {
        let overrides = device.timeouts
        func step(_ id: StepID, _ summary: String, retries: Int = 0) -> PlanStep {
            PlanStep(
                id, summary, deadline: StepDeadlines.deadline(id, overrides: overrides), retries: retries)
        }
        var steps: [PlanStep] = [
            backend == .mac
                ? step(.connect, "check this Mac (sw_vers, uname -m)")
                : step(.connect, "connect over \(backend)", retries: PlanStep.maximumRetries)
        ]
        switch backend {
        case .usb where device.iosMajor < 17:
            steps.append(step(.mount, "mount the Developer Disk Image if it is not mounted", retries: 1))
        case .pymobiledevice3:
            steps.append(step(.mount, "pymobiledevice3 mounter auto-mount (personalized image)", retries: 1))
        default:
            break
        }
        let version = context.version
        let build = "\(version.marketingVersion) (\(version.buildNumber))"
        let (install, launch): (String, String)
        switch backend {
        case .ssh:
            install =
                "back up the installed app and its preferences on the device (a failed backup stops here), "
                + "send only the files that changed, ldid -S, swap \(build) into /Applications, killall, uicache"
            launch =
                "merge the launch settings into the app's preferences plist (token on stdin), then open it"
        case .rosettaSim:
            install = "install \(build) unless unchanged"
            launch = "write the launch settings into the app's preferences plist, then rosettasim-ctl launch"
        case .devicectl, .simctl:
            install = "install \(build) unless unchanged"
            launch =
                "launch with the arguments above (the token through the app's preferences, never a command line)"
        case .pymobiledevice3:
            install = "install \(build) over usbmuxd unless unchanged"
            launch =
                "launch through pymobiledevice3's tunnel (its argument list on stdin, never a command line)"
        case .usb:
            // installation_proxy Upgrade when the app is there: its data container is kept.
            install =
                "install \(build) unless unchanged (an upgrade in place when installed: the app's data is kept)"
            // debugserver hands them to the app itself: on no command line of this computer.
            launch = "launch with the arguments above (through debugserver, as the app's own arguments)"
        case .mac:
            install =
                "copy \(build) (ditto) into \(MacAppLocations.installRootDisplay)/<bundle id>/ unless unchanged, "
                + "two renames swap it in, the copy it replaces kept in previous/"
            launch =
                "quit the running app (osascript quit, killall when it has not quit in time), merge the launch "
                + "settings into the app's defaults domain (defaults export, then defaults import with the plist "
                + "on stdin: the token is on no command line), open the installed copy"
        }
        steps.append(
            step(
                .install,
                context.options.force
                    ? install.replacingOccurrences(of: " unless unchanged", with: "")
                        + " (--force: sent even when the device has this exact build)" : install,
                retries: 1))
        if context.verify && verification.loadedEvent && device.launch {
            steps.append(step(.subscribe, "subscribe to ha_dashboard_loaded for this deploy"))
        }
        // `launch: false`: installed (an upgrade keeps the app's data) and left as the device has it.
        guard device.launch else { return steps }
        steps.append(step(.launch, launch, retries: 1))
        if context.verify {
            var evidence = [
                backend == .mac
                    ? "the app's log (~/Documents/ha-log.txt; in its container if it is sandboxed)"
                    : "the app's log (Documents/ha-log.txt)"
            ]
            if verification.homeAssistant { evidence.append("its mobile_app entry in Home Assistant") }
            if verification.loadedEvent { evidence.append("the ha_dashboard_loaded event") }
            steps.append(
                PlanStep(
                    .verify,
                    "wait for the dashboard to load: " + evidence.joined(separator: ", "),
                    deadline: .seconds(verification.timeout)))
        }
        steps.append(step(.crashCheck, "check for crash reports newer than the launch"))
        if context.options.screenshots {
            switch backend {
            case .devicectl:
                // devicectl has no screenshot command; the plan says so rather than failing later.
                break
            case .mac:
                // screencapture takes the whole desktop (other windows, notifications) and needs the
                // Screen Recording permission: no screenshot of the Mac goes into a report.
                break
            default:
                steps.append(step(.screenshot, "take a screenshot for the report"))
            }
        }
        return steps
    }
}
