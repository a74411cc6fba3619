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

    @Option(
        name: .long, defaultAsFlag: "", parsing: .next,
        help: ArgumentHelp(
            "Publish to Home Assistant through MQTT discovery (the broker: URL, else MQTT_URL).",
            valueName: "url"))
    var publish: String? = nil

    @Option(
        name: .customLong("topic-prefix"),
        help: ArgumentHelp("With --publish: hadeploy's topics (states, availability).", valueName: "prefix"))
    var topicPrefix = "hadeploy"

    @Option(
        name: .customLong("discovery-prefix"),
        help: ArgumentHelp("With --publish: Home Assistant's MQTT discovery prefix.", valueName: "prefix"))
    var discoveryPrefix = "homeassistant"

    @Option(
        name: .long,
        help: ArgumentHelp("Keep running: one status every interval (30s, 5m, 1h).", valueName: "interval"))
    var every: String?

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
        if let publish, !publish.isEmpty, !publish.contains("://") {
            throw ValidationError(
                "--publish takes a broker URL (mqtt://host:1883), not \"\(publish)\": name the targets before "
                    + "--publish, or give the URL")
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
        let records: DeployRecords =
            virtual ? .twins(context, stateDirectory: stateDirectory) : .project(context)
        let session = StatusSession(
            context: context, variables: inputs.variables, deployPlan: inputs.plan, virtual: virtual,
            records: records, deadlineSeconds: timeout)
        let interval = every.flatMap(Self.seconds)
        var publishing: StatusPublishing?
        var problem: StatusPublishing.Problem?
        if let publish {
            do throws(StatusPublishing.Problem) {
                publishing = try StatusPublishing(
                    url: publish.isEmpty ? nil : publish, discoveryPrefix: discoveryPrefix,
                    topicPrefix: topicPrefix, variables: inputs.variables, context: context,
                    recordDirectory: virtual
                        ? stateDirectory.appendingPathComponent("twins-published")
                        : context.url(for: ".hadeploy/published"),
                    deadlineSeconds: timeout, everySeconds: interval)
            } catch {
                problem = error
            }
        }
        let configured = Set(inputs.matrix.devices.map(\.id))
        let plan: StatusPlan
        do {
            plan = try session.plan()
        } catch {
            await inputs.twins?.stop()
            throw error
        }
        let publisher = publishing
        let cycle: @Sendable () async -> (StatusReport, StatusPublishing.Problem?) = {
            let result = await session.run(plan)
            var published: StatusPublishing.Problem?
            if let publishing = publisher {
                do throws(StatusPublishing.Problem) {
                    let summary = try await publishing.publish(
                        result, plan: plan, records: records, configured: configured)
                    var line = "published \(summary.published.count) device(s) to \(publishing.broker)"
                    if !summary.unavailable.isEmpty {
                        line += " (unavailable: \(summary.unavailable.joined(separator: ", ")))"
                    }
                    if !summary.removed.isEmpty {
                        line += "; removed from Home Assistant: \(summary.removed.joined(separator: ", "))"
                    }
                    context.message(line)
                } catch {
                    published = error
                }
            }
            return (result, published)
        }
        guard let interval, problem == nil else {
            let (result, published) = await cycle()
            await inputs.twins?.stop()
            try show(result, context: context)
            if let failed = problem ?? published {
                context.message("error: \(failed.message)")
                throw ExitCode(failed.exitCode)
            }
            if result.exitCode != 0 { throw ExitCode(result.exitCode) }
            return
        }
        // A service: one status per interval, counted from each start, until SIGINT or SIGTERM.
        let clock = context.clock
        let task = Task {
            while !Task.isCancelled {
                let started = clock.instant()
                let (result, published) = await cycle()
                if Task.isCancelled { break }
                try? show(result, context: context)
                if let published { context.message("error: \(published.message)") }
                try? await clock.sleep(until: started + .seconds(interval))
            }
        }
        let signals = SignalCancellation { task.cancel() }
        defer { signals.cancel() }
        await task.value
        await inputs.twins?.stop()
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
