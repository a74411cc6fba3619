import ArgumentParser
import DeployModel
import DeviceSpec
import Foundation
import HADeployCore
import HADeployKit
import HADeployReporting
import HADeployStatus

struct StatusCommand: ContextCommand {
    static let configuration = CommandConfiguration(
        commandName: "status",
        abstract: "Every device at a glance: reachable, build, app, dashboard, battery, storage, restarts.",
        discussion: """
            Asks each device at once, each with a short deadline, without installing,
            mounting or launching anything: whether it answers (and why not), the
            installed build against the one a deploy would install (--artifact or
            --artifacts, else the git version), whether the app runs, the dashboard
            its log shows now, when a deploy from here last verified it, battery and
            charging, free storage, the iOS version, and whether it restarted since
            the last deploy. A backend that cannot tell something says so ("not
            available from the ... backend").
            Examples:
              hadeploy status all
              hadeploy status all --virtual                 the twins
              hadeploy status mini4 ipad2 --json
              hadeploy status all --artifacts dist/ --report out/
            Exit codes: 0 every device answered and nothing needs attention,
            1 some device needs attention (build outdated or missing, app not
            running, dashboard not loaded, battery at 20 % or less and not
            charging, under 1 GB free, restarted since the last deploy), 3 some
            device did not answer (whatever else), 64 usage, 78 config. Devices
            this host cannot reach at all (a simulator on Linux) are listed and
            count for none.
            """)

    @OptionGroup var project: ProjectOptions

    @Argument(
        help: ArgumentHelp(
            "Devices, aliases or groups from devices.yaml (`all` for every device).", valueName: "target"))
    var targets: [String] = []

    @Flag(name: .long, help: "The virtual twins standing in for the matrix (started for this run).")
    var virtual = false

    @Option(name: .long, help: ArgumentHelp("State directory for --virtual devices.", valueName: "dir"))
    var state: String = ".hadeploy/virtual"

    @Flag(
        name: .customLong("wifi-only"),
        help:
            "With --virtual: the twins are Wi-Fi devices only, listed by no usbmuxd and announced over mDNS.")
    var wifiOnly = false

    @Option(
        name: .long,
        help: ArgumentHelp("Compare with this .ipa/.app (what a deploy would install).", valueName: "path"))
    var artifact: String?

    @Option(name: .long, help: ArgumentHelp("Compare with DIR/<flavour>/*.ipa|.app.", valueName: "dir"))
    var artifacts: String?

    @Option(
        name: .long,
        help: ArgumentHelp("Seconds each device may take to answer (default 15).", valueName: "s"))
    var timeout: Double = 15

    @Flag(name: .long, help: "The status as JSON on stdout.")
    var json = false

    @Option(
        name: .long,
        help: ArgumentHelp("Write status.json and index.html (a contact sheet) here.", valueName: "dir"))
    var report: String?

    @Flag(name: .customLong("allow-shallow"), help: "Accept a shallow clone's (wrong) build number.")
    var allowShallow = false

    func validate() throws {
        if targets.isEmpty {
            throw ValidationError("name at least one target, e.g. `hadeploy status all`")
        }
        if artifact != nil && artifacts != nil {
            throw ValidationError("--artifact and --artifacts conflict")
        }
        if let artifact, artifact.isEmpty {
            throw ValidationError("--artifact needs a path to an .ipa or .app")
        }
        if let artifacts, artifacts.isEmpty { throw ValidationError("--artifacts needs a folder") }
        if !(timeout >= 1 && timeout <= 600) {
            throw ValidationError("--timeout \(timeout) is out of range: give seconds from 1 to 600")
        }
    }

    func run(_ context: HADeployContext) async throws {
        if let report {
            try ReportWriter.checkWritable(
                context.url(for: report), displayName: report, fileSystem: context.fileSystem)
        }
        let workspace = project.workspace(context)
        var flags = ["--no-build", "--no-verify", "--state=\(state)"]
        if virtual { flags.append("--virtual") }
        if wifiOnly { flags.append("--wifi-only") }
        if allowShallow { flags.append("--allow-shallow") }
        if let artifact { flags.append("--artifact=\(artifact)") }
        if let artifacts { flags.append("--artifacts=\(artifacts)") }
        let arguments = try DeployArguments.parse(flags + ["--"] + targets)
        let inputs = try await PlanInputs.make(
            workspace: workspace, arguments: arguments, screenshots: false)
        let stateDirectory = context.url(for: state)
        let session = StatusSession(
            context: context, variables: inputs.variables, deployPlan: inputs.plan, virtual: virtual,
            records: virtual ? .twins(context, stateDirectory: stateDirectory) : .project(context),
            deadlineSeconds: timeout)
        let result: StatusReport
        do {
            let plan = try session.plan()
            result = await session.run(plan)
        } catch {
            await inputs.twins?.stop()
            throw error
        }
        await inputs.twins?.stop()
        if json {
            context.print(try StatusText.json(result))
        } else {
            context.print(StatusText.table(result))
        }
        if let report {
            try ReportWriter(directory: context.url(for: report), fileSystem: context.fileSystem).write(
                result)
            context.message("report: \((report as NSString).appendingPathComponent("index.html"))")
        }
        if result.exitCode != 0 { throw ExitCode(result.exitCode) }
    }
}
