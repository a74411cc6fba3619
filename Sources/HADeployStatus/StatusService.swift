import DeployModel
import Foundation
import HADeployCore
import HADeployKit
import MQTT

/// `hadeploy status … [--publish] [--every INTERVAL]`: one status (and publish) per round, and as a
/// service one round per interval until the task is cancelled (SIGINT, SIGTERM).
public struct StatusService: Sendable {
    /// One status's inputs: devices.yaml and `.env` as read for it, and its plan.
    public struct Round: Sendable {
        public var session: StatusSession
        public var plan: StatusPlan
        /// Every device devices.yaml names (a device published before and not in it is removed).
        public var configured: Set<String>

        public init(session: StatusSession, plan: StatusPlan, configured: Set<String>) {
            self.session = session
            self.plan = plan
            self.configured = configured
        }
    }

    public var context: HADeployContext
    public var records: DeployRecords
    /// Nil without --publish.
    public var publishing: StatusPublishing?
    /// The commands Home Assistant may send (`--commands`, with `--publish` and `--every`); nil: none.
    public var commands: FleetCommands?
    /// The devices are asked, and acted on, one round or one command at a time: a run sets up this
    /// process's usbmuxd routes for itself (`RunRoutes`), and a status and a deploy at once would
    /// replace each other's.
    let deviceWork = OneAtATime()

    public init(
        context: HADeployContext, records: DeployRecords, publishing: StatusPublishing?,
        commands: FleetCommands? = nil
    ) {
        self.context = context
        self.records = records
        self.publishing = publishing
        self.commands = commands
    }

    /// The round's status, published when publishing (the line saying what was published goes to
    /// stderr; a failed publish is returned). Nil when the task was cancelled while the devices were
    /// asked: what they answered then is not what they are, so nothing is published.
    public func cycle(_ round: Round) async -> (StatusReport, StatusPublishing.Problem?)? {
        // Published within it too: each publish connects under the service's one client id.
        await deviceWork.acquire()
        let outcome = await cycleAlone(round)
        await deviceWork.release()
        return outcome
    }

    private func cycleAlone(_ round: Round) async -> (StatusReport, StatusPublishing.Problem?)? {
        let result = await round.session.run(round.plan)
        if Task.isCancelled { return nil }
        guard let publishing else { return (result, nil) }
        // A publish that started finishes (within its own deadlines) even when the service is told
        // to stop meanwhile: cut between a device's discovery configs and its availability, which
        // comes last, Home Assistant showed a device that answered as unavailable.
        let published = await Task { () async -> Result<FleetPublisher.Summary, StatusPublishing.Problem> in
            do throws(StatusPublishing.Problem) {
                return .success(
                    try await publishing.publish(
                        result, plan: round.plan, records: records, configured: round.configured))
            } catch {
                return .failure(error)
            }
        }.value
        switch published {
        case .success(let summary):
            context.message(publishing.line(summary))
            return (result, nil)
        case .failure(let error):
            return (result, error)
        }
    }

    /// A round every `interval`, counted from each one's start, until the task is cancelled. Each
    /// round after the first reads its inputs again with `reread` (nil: the first round's stay, as
    /// for the twins of --virtual); a read that fails is one line on stderr, and the last good one
    /// is used. `show` gets each status; a failed publish is one line, then the next interval.
    public func run(
        first: Round, every interval: Duration, reread: (@Sendable () async throws -> Round)?,
        show: @Sendable (StatusReport) -> Void
    ) async {
        let clock = context.clock
        var current = first
        var rounds = 0
        let latest = LatestRound(first)
        // Commands are taken beside the rounds, until the service stops; a command taken is done.
        let listener = commands.flatMap { commands in
            publishing.map { publishing in
                Task { await listen(commands, publishing: publishing, latest: latest) }
            }
        }
        defer { listener?.cancel() }
        while !Task.isCancelled {
            let started = clock.instant()
            if rounds > 0, let reread {
                do {
                    current = try await reread()
                } catch {
                    context.message(
                        "error: \(SystemErrorText.message(error)); the devices of the last good read are asked"
                    )
                }
            }
            rounds += 1
            await latest.set(current)
            guard let (result, failure) = await cycle(current) else { break }
            await latest.set(result)
            show(result)
            if let failure { context.message("error: \(failure.message)") }
            try? await clock.sleep(until: started + interval)
        }
        listener?.cancel()
        await listener?.value
    }

    /// Takes commands from the broker until cancelled, connecting again after a failure; then waits
    /// for the actions started.
    func listen(_ commands: FleetCommands, publishing: StatusPublishing, latest: LatestRound) async {
        let publisher = publishing.publisher
        let topics = publisher.discovery.topics
        let actions = FleetActions()
        var said = false
        while !Task.isCancelled {
            let client = MQTTClient(
                broker: publisher.broker, clientID: publisher.clientID + "-commands",
                stepDeadline: publisher.stepDeadline, clock: publisher.clock)
            do {
                try await client.connect()
                try await client.subscribe([topics.commands])
                if !said {
                    context.message("taking commands from Home Assistant on \(topics.commands)")
                    said = true
                }
                // The broker's keep-alive (60 s): a ping every 30 s; one unanswered ends the connection.
                let clock = context.clock
                let pinger = Task {
                    while !Task.isCancelled {
                        try? await clock.sleep(for: .seconds(30))
                        if Task.isCancelled { return }
                        do { try await client.ping() } catch {
                            await client.drop()
                            return
                        }
                    }
                }
                for await message in client.messages {
                    await handle(
                        message, commands: commands, topics: topics, latest: latest, actions: actions,
                        client: client)
                }
                pinger.cancel()
            } catch {
                context.message(
                    "error: commands from Home Assistant: \(SystemErrorText.message(error)); trying again in 30 s"
                )
            }
            await client.disconnect()
            if Task.isCancelled { break }
            try? await context.clock.sleep(for: .seconds(30))
        }
        await actions.drain()
    }

    /// One message: checked (`FleetCommandRequest`), then acted on for its device unless it is busy.
    func handle(
        _ message: MQTTMessage, commands: FleetCommands, topics: FleetTopics, latest: LatestRound,
        actions: FleetActions, client: MQTTClient
    ) async {
        let (round, report) = await latest.value
        let request: FleetCommandRequest
        switch FleetCommandRequest.read(message, topics: topics, plan: round.plan) {
        case .success(let value): request = value
        case .failure(.retained(let device, let key)):
            context.message("\(device): a retained \(key) command was not acted on (only a live one acts)")
            return
        case .failure(.unknown(let device, let key)):
            context.message("\(device): an unknown command (\(key)) was not acted on")
            return
        case .failure: return
        }
        let context = self.context
        let say: @Sendable (String) async -> Void = { line in
            try? await client.publish(
                MQTTMessage(
                    topic: topics.state(node: request.node, key: "last_command"),
                    text: FleetEntity.text(line),
                    retain: true))
        }
        let name = request.command.rawValue
        let status = report?.devices.first { $0.id == request.device }
        let service = self
        let busy = await actions.start(request.device, request.command) {
            await say("\(name): running")
            let line: String
            switch request.command {
            case .refresh:
                line = "done"
            case .relaunch where status.map({ $0.build == .outdated || $0.build == .missing }) == true:
                // A relaunch installs nothing: a device without the configured build is told so.
                line =
                    "not relaunched: the installed build is not \(status?.expected.build.description ?? "the configured one")"
                    + " — use Install"
            default:
                await service.deviceWork.acquire()
                line = await commands.act(request.command, request.device)
                await service.deviceWork.release()
            }
            context.message("\(request.device): \(name) from Home Assistant: \(line)")
            await say("\(name): \(line)")
            // The device's status now, published: an install's version shows at once.
            let (now, _) = await latest.value
            if let (result, _) = await service.cycle(now) { await latest.set(result) }
        }
        if let busy {
            context.message(
                "\(request.device): \(name) from Home Assistant not started: \(busy.rawValue) is running")
            await say("\(name) not started: \(busy.rawValue) is running")
        }
    }
}

/// One at a time, in the order asked (an actor alone lets a second caller in at each suspension).
actor OneAtATime {
    private var busy = false
    private var waiting: [CheckedContinuation<Void, Never>] = []

    func acquire() async {
        guard busy else {
            busy = true
            return
        }
        await withCheckedContinuation { waiting.append($0) }
    }

    func release() {
        if waiting.isEmpty { busy = false } else { waiting.removeFirst().resume() }
    }
}

/// The round the service asks now and what it last answered, for the commands taken beside it.
actor LatestRound {
    private var round: StatusService.Round
    private var report: StatusReport?

    init(_ round: StatusService.Round) { self.round = round }

    var value: (StatusService.Round, StatusReport?) { (round, report) }

    func set(_ round: StatusService.Round) { self.round = round }
    func set(_ report: StatusReport) { self.report = report }
}
