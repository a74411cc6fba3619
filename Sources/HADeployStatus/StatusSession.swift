import DeployModel
import DeviceSpec
import Foundation
import HADeployBuild
import HADeployCore
import HADeployDrivers
import HADeployKit
import MobileDevice

/// `hadeploy status` from a deploy plan: which build a deploy would install, the status plan, and the
/// executor over this run's drivers. libusbmuxd reads one usbmuxd address per process: the devices of
/// the first USB route are asked here; those of another route say so (run status for them alone).
public struct StatusSession: Sendable {
    public var context: HADeployContext
    /// The environment the plan's secret references are read from (`.env` over the process's).
    public var variables: [String: String]
    public var deployPlan: DeployPlan
    /// `--virtual`: without BUNDLE_ID, the app asked about is the twins' demo app.
    public var virtual: Bool
    public var records: DeployRecords
    /// How long every device (and Home Assistant) has to answer.
    public var deadlineSeconds: Double

    public init(
        context: HADeployContext, variables: [String: String], deployPlan: DeployPlan, virtual: Bool,
        records: DeployRecords, deadlineSeconds: Double
    ) {
        self.context = context
        self.variables = variables
        self.deployPlan = deployPlan
        self.virtual = virtual
        self.records = records
        self.deadlineSeconds = deadlineSeconds
    }

    /// The status plan: the artifacts the deploy plan names (`--artifact`, `--artifacts`) are
    /// inspected; nothing is built or generated.
    public func plan() throws -> StatusPlan {
        var artifacts: [String: Artifact] = [:]
        if case .files = deployPlan.artifacts {
            // Read where they are: status installs nothing, it only compares.
            artifacts = try deployPlan.artifacts.artifacts(
                for: deployPlan, host: .current, copyingInto: nil, now: context.clock.now(),
                in: context.fileSystem)
        }
        let bundleID =
            variables["BUNDLE_ID"].flatMap { $0.isEmpty ? nil : $0 }
            ?? (virtual ? DemoAppBuilder.defaultBundleID : nil)
        return StatusPlanner(
            records: records, defaultBundleID: bundleID, deadlineSeconds: deadlineSeconds
        ).plan(deployPlan, artifacts: artifacts)
    }

    public func run(_ plan: StatusPlan) async -> StatusReport {
        // The same run setup as a deploy's: every route's devices are asked here (a USB host's
        // through its SSH tunnel); a route that cannot be opened is said for its own devices.
        let routes = await RunRoutes.open(
            plan.devices.map(\.device), login: deployPlan.usbHostLogin, environment: variables,
            stateDirectory: context.url(for: deployPlan.stateDirectory), fileSystem: context.fileSystem
        ) { context.message($0) }
        // The drivers come from the plan's configuration alone (twins' endpoints included).
        let drivers = DriverRegistry(
            host: .current, environment: variables, runner: context.runner, fileSystem: context.fileSystem,
            clock: context.clock, workingDirectory: context.currentDirectory)
        var report = await StatusExecutor(
            plan: plan,
            driver: { device in
                if let failure = routes.failure(for: device) { throw failure }
                return try drivers.driver(for: device)
            }, clock: context.clock
        ).run()
        await routes.close()
        await addHomeAssistantDashboards(to: &report, plan: plan)
        return report
    }

    /// Where the app reports to Home Assistant (`ha_integration: true`), the `active_dashboard` it
    /// last reported, read once for every such device within the status deadline.
    func addHomeAssistantDashboards(to report: inout StatusReport, plan: StatusPlan) async {
        // Under the name the deploy's check uses: devices.yaml's `ha_device`, else the name the
        // device gave when it answered (the app registers under it).
        var names: [String: String] = [:]
        for device in plan.devices where device.device.verification.homeAssistant {
            let answered = report.devices.first { $0.id == device.device.id }?.name
            names[device.device.id] =
                device.device.verification.homeAssistantDevice ?? answered ?? device.device.name
        }
        guard !names.isEmpty else { return }
        let wanted = Array(Set(names.values)).sorted()
        let answers = await activeDashboards(wanted)
        for index in report.devices.indices {
            guard let name = names[report.devices[index].id] else { continue }
            report.devices[index].homeAssistantDashboard =
                answers[name] ?? .unavailable("Home Assistant did not say")
        }
    }

    func activeDashboards(_ names: [String]) async -> [String: Fact<String>] {
        func everyone(_ reason: String) -> [String: Fact<String>] {
            Dictionary(names.map { ($0, Fact<String>.unavailable(reason)) }, uniquingKeysWith: { a, _ in a })
        }
        guard let server = deployPlan.server.value, let reference = deployPlan.accessToken,
            let token = reference.resolve(variables)
        else { return everyone("HA_SERVER and HA_TOKEN are not both set") }
        let verifier: HomeAssistantVerifier
        do {
            verifier = try HomeAssistantVerifier(
                server: server, token: token, caFile: deployPlan.caFile, clock: context.clock)
        } catch {
            return everyone("Home Assistant is not usable: \(SystemErrorText.message(error))")
        }
        let seconds = deadlineSeconds
        let answers: [String: Fact<String>]
        do {
            answers = try await withDeadline(
                "reading Home Assistant", .checkedSeconds(seconds), clock: context.clock
            ) {
                try await verifier.activeDashboards(deviceNames: names)
            }
        } catch {
            answers = everyone("Home Assistant could not be read: \(SystemErrorText.message(error))")
        }
        await verifier.close()
        return answers
    }
}
