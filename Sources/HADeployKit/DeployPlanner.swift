import DeviceSpec
import HADeployCore
import Versioning

/// Turns command-line options, the matrix, `.env` values and the version into a `DeployPlan`.
/// Pure: no files, processes or clock — everything comes in as parameters.
public struct DeployPlanner: Sendable {
    public var matrix: DeviceMatrix
    /// `.env` merged with the environment (the environment wins).
    public var variables: [String: String]
    public var host: HostPlatform

    public init(matrix: DeviceMatrix, variables: [String: String], host: HostPlatform) {
        self.matrix = matrix
        self.variables = variables
        self.host = host
    }

    public func plan(options: DeployOptions, version: GitVersion, deployID: String) throws -> DeployPlan {
        let devices = try TargetResolver(matrix: matrix).resolve(options.targets)
        var warnings: [String] = []

        let serverValue = options.server ?? nonEmpty(variables["HA_SERVER"])
        let server = serverValue ?? "<unset: HA_SERVER>"
        let token = nonEmpty(variables["HA_TOKEN"])

        var devicePlans: [DevicePlan] = []
        for device in devices {
            devicePlans.append(
                plan(
                    device, options: options, server: serverValue, token: token, deployID: deployID,
                    version: version))
        }

        let commands = BuildCommandBuilder(variables: variables, version: version)
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
                    buildHost: host == .macOS ? nil : matrix.buildHost?.display(variables),
                    commands: options.build ? commands.commands(flavour) : [])
            )
        }
        if !options.verify {
            warnings.append("--no-verify: the dashboard check is skipped; results will say so")
        }
        return DeployPlan(
            version: version, deployID: deployID, server: server, verify: options.verify, builds: builds,
            devices: devicePlans, warnings: warnings)
    }

    private func nonEmpty(_ value: String?) -> String? {
        guard let value, !value.isEmpty else { return nil }
        return value
    }

    func plan(
        _ device: Device, options: DeployOptions, server: String?, token: String?, deployID: String,
        version: GitVersion
    ) -> DevicePlan {
        var unset: [String] = []
        func resolved(_ value: ConfigValue?) -> String? {
            guard let value else { return nil }
            switch value.resolve(variables) {
            case .value(let text): return text
            case .unset(let names):
                unset += names
                return value.display(variables)
            }
        }
        let udid = resolved(device.udid)
        let sshHost: String?
        if device.transport == .ssh {
            sshHost = resolved(device.host)
        } else {
            sshHost = device.host?.display(variables)
        }
        let usbHost = device.usbHost.flatMap { value -> String? in
            let text = value.display(variables)
            return text.isEmpty ? nil : text
        }

        let kiosk = options.kiosk ?? device.kiosk
        let dashboard: String?
        switch options.dashboard {
        case .named(let name): dashboard = name
        case .appDefault: dashboard = nil
        case .unspecified: dashboard = device.dashboard ?? nonEmpty(variables["HA_DASHBOARD"])
        }

        var arguments = LaunchArguments()
        if server == nil { unset.append("HA_SERVER") }
        if token == nil { unset.append("HA_TOKEN") }
        arguments.append("-HAServerURL", server ?? "<unset: HA_SERVER>")
        arguments.append("-HAAccessToken", token ?? "<unset: HA_TOKEN>", secret: true)
        if let dashboard {
            arguments.append("-HADashboard", dashboard)
        } else {
            arguments.append("-HADefaultDashboard", "YES")
        }
        arguments.append("-HAKioskMode", kiosk ? "YES" : "NO")
        arguments.append("-HADeployID", deployID)
        // Echoed back as `device` in ha_dashboard_loaded, so an event is matched to this device.
        arguments.append("-HADeviceID", device.id)

        var availability = Availability.available
        switch device.transport {
        case .simctl, .rosettasim, .devicectl:
            if host != .macOS {
                let tool =
                    device.transport == .devicectl
                    ? "xcrun devicectl"
                    : device.transport == .simctl
                        ? "xcrun simctl" : "rosettasim-ctl"
                if device.transport == .devicectl {
                    // On Linux an iOS 17+ device still installs over usbmuxd; launch needs pymobiledevice3.
                    availability = .available
                } else {
                    availability = .notOnThisHost(reason: "\(tool) needs macOS")
                }
            }
        case .usb, .ssh:
            break
        }

        var steps: [String] = []
        let builder = host == .macOS ? nil : matrix.buildHost?.display(variables)
        steps.append(
            options.build
                ? "build (flavour \(device.flavour), shared\(builder.map { ", on \($0)" } ?? ""))"
                : "use the existing \(device.flavour) build")
        var connect = "connect over \(device.transport.rawValue)"
        if device.transport == .devicectl && host == .linux {
            connect = "connect over usbmuxd (install); launch and screenshot through pymobiledevice3's tunnel"
        }
        if let fallback = device.fallbackTransport { connect += " (fallback: \(fallback.rawValue))" }
        if let usbHost { connect += " via \(usbHost)" }
        steps.append(connect)
        if device.transport == .usb && device.iosMajor < 17 {
            steps.append("mount the Developer Disk Image if needed")
        }
        steps.append("install \(version.marketingVersion) (\(version.buildNumber)) unless unchanged")
        steps.append("launch with the arguments above")
        if options.verify {
            steps.append("wait up to \(Int(device.verificationTimeout)) s for ha_dashboard_loaded")
        } else {
            steps.append("dashboard check skipped (--no-verify)")
        }
        steps.append("check for crash reports")
        steps.append("screenshot")

        var seen = Set<String>()
        return DevicePlan(
            id: device.id, name: device.name, kind: device.kind, transport: device.transport,
            fallbackTransport: device.fallbackTransport, productType: device.productType,
            ios: device.iosVersion,
            arch: device.arch.rawValue, flavour: device.flavour, udid: udid, host: sshHost, usbHost: usbHost,
            kiosk: kiosk, dashboard: dashboard, verificationTimeout: device.verificationTimeout,
            timeouts: device.timeouts,
            launchArguments: arguments, steps: steps, unsetKeys: unset.filter { seen.insert($0).inserted },
            availability: availability)
    }
}
