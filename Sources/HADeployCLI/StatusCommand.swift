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
            Home Assistant: --publish sends each device to Home Assistant through
            MQTT discovery (the broker from MQTT_URL, environment or .env, or
            --publish URL: mqtt://user:password@host:1883 or mqtts://...; a
            private CA in MQTT_CA_FILE). The status is printed first; then, when
            the broker cannot be used (unreachable, credentials refused, TLS
            certificate not verified, no answer in time), one line says why and
            the exit code is 4; a bad broker URL or topic prefix: 64 (command
            line) or 78 (MQTT_URL). --every 5m keeps running, one status and
            publish per interval (a broker failure is one line, then the next
            interval); Ctrl-C or SIGTERM ends it with 0.
              hadeploy status all --publish
              hadeploy status all --publish mqtts://broker.lan:8883 --every 5m
            --commands (with --every and --publish) also takes commands from Home
            Assistant for the devices this host drives: each device's Relaunch,
            Redeploy, Refresh and Screenshot buttons and its update entity
            (update.hadeploy_ID_app: Install when --artifacts holds another build
            than the one installed) run here as `hadeploy ID --no-build --artifacts
            DIR` would (Redeploy with --force; Relaunch installs nothing); a
            retained or unknown command does nothing; one at a time per device.
              hadeploy status all --artifacts dist/ --publish --every 5m --commands
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

    @OptionGroup var publishing: PublishOptions

    @Option(
        name: .long,
        help: ArgumentHelp("Keep running: one status every interval (30s, 5m, 1h).", valueName: "interval"))
    var every: String?

    @Flag(
        name: .long,
        help: ArgumentHelp(
            "With --every and --publish: take commands from Home Assistant for the devices this host drives "
                + "(Relaunch, Redeploy, Refresh, Screenshot buttons; the update entity's Install of --artifacts)."
        ))
    var commands = false

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
        if commands {
            if every == nil || publishing.publish == nil {
                throw ValidationError("--commands goes with --every and --publish: the service takes them")
            }
            if artifact == nil && artifacts == nil {
                throw ValidationError(
                    "--commands needs the build Install and Redeploy put on a device: --artifacts DIR or --artifact PATH"
                )
            }
            if virtual {
                throw ValidationError("--commands drives the devices themselves: not with --virtual")
            }
        }
        if let every {
            guard let seconds = Self.seconds(every) else {
                throw ValidationError("--every \(every) is not an interval: write 30s, 5m or 1h")
            }
            if seconds < Int(timeout.rounded(.up)) + 5 {
                throw ValidationError(
                    "--every \(every) is shorter than one status (--timeout \(Int(timeout)) s and 5 s to publish)"
                )
            }
        }
    }

    /// `30s`, `5m`, `1h` or plain seconds, in seconds.
    static func seconds(_ interval: String) -> Int? {
        let units: [Character: Int] = ["s": 1, "m": 60, "h": 3600]
        var text = interval.trimmingCharacters(in: .whitespaces).lowercased()
        var unit = 1
        if let last = text.last, let multiplier = units[last] {
            unit = multiplier
            text.removeLast()
        }
        guard let count = Int(text), count > 0, count <= 7 * 24 * 3600 / unit else { return nil }
        return count * unit
    }

    func run(_ context: HADeployContext) async throws {
        if let report {
            try ReportWriter.checkWritable(
                context.url(for: report), displayName: report, fileSystem: context.fileSystem)
        }
        let stateDirectory = context.url(for: state)
        let records: DeployRecords =
            virtual ? .twins(context, stateDirectory: stateDirectory) : .project(context)
        let (first, inputs) = try await round(context, records: records)
        // Held until the end: the twins (--virtual) and their state folder's lock.
        defer { withExtendedLifetime(inputs) {} }
        let twins = inputs.twins
        let interval = every.flatMap(Self.seconds)
        var publisher: StatusPublishing?
        var problem: StatusPublishing.Problem?
        switch publishing.publishing(
            variables: inputs.variables, context: context,
            recordDirectory: PublishOptions.recordDirectory(
                context: context, virtual: virtual, stateDirectory: stateDirectory),
            deadlineSeconds: timeout, everySeconds: interval, commands: commands)
        {
        case .success(let value): publisher = value
        case .failure(let error): problem = error
        case nil: break
        }
        let command = self
        let service = StatusService(
            context: context, records: records, publishing: publisher,
            commands: commands ? FleetCommands { await command.act($0, device: $1, context: context) } : nil)
        guard let interval, problem == nil else {
            let outcome = await service.cycle(first)
            await twins?.stop()
            guard let (result, failure) = outcome else { throw ExitCode(ExitStatus.interrupted.rawValue) }
            try show(result, context: context)
            if let failed = problem ?? failure {
                context.message("error: \(failed.message)")
                throw ExitCode(failed.exitCode)
            }
            if result.exitCode != 0 { throw ExitCode(result.exitCode) }
            return
        }
        // A service until SIGINT or SIGTERM; devices.yaml and .env are read again each interval (the
        // twins of --virtual stay as started).
        let reread: (@Sendable () async throws -> StatusService.Round)? =
            virtual ? nil : { @Sendable in try await command.round(context, records: records).round }
        let task = Task {
            await service.run(first: first, every: .seconds(interval), reread: reread) { result in
                try? show(result, context: context)
            }
        }
        let signals = SignalCancellation { task.cancel() }
        defer { signals.cancel() }
        await task.value
        await twins?.stop()
    }

    /// Reads devices.yaml and `.env` and plans the status (with --virtual, the twins are started).
    func round(_ context: HADeployContext, records: DeployRecords) async throws -> (
        round: StatusService.Round, inputs: PlanInputs
    ) {
        var flags = ["--no-build", "--no-verify", "--state=\(state)"]
        if virtual { flags.append("--virtual") }
        if wifiOnly { flags.append("--wifi-only") }
        if allowShallow { flags.append("--allow-shallow") }
        if let artifact { flags.append("--artifact=\(artifact)") }
        if let artifacts { flags.append("--artifacts=\(artifacts)") }
        let arguments = try DeployArguments.parse(flags + ["--"] + targets)
        let inputs = try await PlanInputs.make(
            workspace: project.workspace(context), arguments: arguments, screenshots: false)
        let session = StatusSession(
            context: context, variables: inputs.variables, deployPlan: inputs.plan, virtual: virtual,
            records: records, deadlineSeconds: timeout)
        do {
            var watchdogs: [String: Watchdog] = [:]
            for device in inputs.matrix.devices { watchdogs[device.id] = device.watchdog }
            var round = StatusService.Round(
                session: session, plan: try session.plan(), configured: Set(inputs.matrix.devices.map(\.id)),
                watchdogs: watchdogs)
            // The update entity's release notes and page: the tag of each configured version.
            if commands {
                for version in Set(round.plan.devices.map(\.expected.marketingVersion)) {
                    if let release = await project.workspace(context).release(marketingVersion: version) {
                        round.releases[version] = PublishedRelease(notes: release.notes, url: release.url)
                    }
                }
            }
            return (round, inputs)
        } catch {
            await inputs.twins?.stop()
            throw error
        }
    }

    /// A command from Home Assistant (`--commands`): the deploy of that one device, planned as `hadeploy
    /// ID --no-build --artifacts DIR` plans it (Redeploy with --force), with its verification and the
    /// deploy's own lock; the line its Last command sensor shows.
    func act(_ command: FleetCommands.Command, device id: String, context: HADeployContext) async -> String {
        var flags = ["--no-build"]
        if allowShallow { flags.append("--allow-shallow") }
        if let artifact { flags.append("--artifact=\(artifact)") }
        if let artifacts { flags.append("--artifacts=\(artifacts)") }
        if command == .redeploy { flags.append("--force") }
        do {
            let arguments = try DeployArguments.parse(flags + ["--", id])
            let inputs = try await PlanInputs.make(
                workspace: project.workspace(context), arguments: arguments,
                screenshots: command == .screenshot)
            if command == .screenshot {
                let png = try await DeviceScreenshot.take(
                    inputs.plan, device: id, context: context, environment: inputs.variables)
                try DeployRecords.project(context).keepScreenshot(png, device: id)
                return "taken (\(png.count / 1024) KiB)"
            }
            var settings = DeploySession.Settings(
                environment: inputs.variables, reportDirectory: nil, jobs: nil, failFast: false)
            settings.deployRecords = .project(context)
            let reporter = PlainReporter(output: context.output, stream: .standardError, clock: context.clock)
            let report = try await DeploySession(
                context: context, plan: inputs.plan, settings: settings, reporter: reporter
            ).run()
            guard let result = report.results.first else { return "nothing was deployed" }
            return PublishedDeploy(result, finishedAt: report.finishedAt).outcome
        } catch {
            return "failed: \(SystemErrorText.message(error))"
        }
    }

    /// The status as asked: the table or JSON on stdout, and the report folder.
    func show(_ result: StatusReport, context: HADeployContext) throws {
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
    }
}
