import DeployModel
import DeviceSpec
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
        /// The devices whose app is relaunched when it is down (devices.yaml `watchdog:`), by id.
        public var watchdogs: [String: Watchdog]
        /// The release each configured version's tag makes (its notes, its page), by marketing version:
        /// what the update entity shows.
        public var releases: [String: PublishedRelease] = [:]

        public init(
            session: StatusSession, plan: StatusPlan, configured: Set<String>,
            watchdogs: [String: Watchdog] = [:]
        ) {
            self.session = session
            self.plan = plan
            self.configured = configured
            self.watchdogs = watchdogs
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
    let deviceWork = SerialGate()

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
                        result, plan: round.plan, records: records, configured: round.configured,
                        releases: round.releases))
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
        let actions = FleetActions()
        let dog = WatchdogState()
        let claims = FleetClaims(me: "\(context.system.hostName):\(context.currentDirectory.path)")
        // Commands are taken beside the rounds, until the service stops; a command taken is done.
        let listener = commands.flatMap { commands in
            publishing.map { publishing in
                Task {
                    await listen(
                        commands, publishing: publishing, latest: latest, actions: actions, claims: claims)
                }
            }
        }
        defer { listener?.cancel() }
        if commands == nil, !first.watchdogs.isEmpty {
            context.message(
                "note: the watchdog of \(first.watchdogs.keys.sorted().joined(separator: ", ")) acts only in a "
                    + "service that takes commands (--commands)")
        }
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
            if let commands, let publishing {
                await claim(round: current, claims: claims, publishing: publishing)
                await watch(
                    result, round: current, dog: dog, commands: commands, publishing: publishing,
                    latest: latest,
                    actions: actions)
            }
            try? await clock.sleep(until: started + interval)
        }
        listener?.cancel()
        await listener?.value
        await actions.drain()
        // The devices only this service claimed are no longer driven from here.
        if commands != nil, let publishing {
            await publishing.retain(await claims.solelyMine.map { ($0, "host", "") })
        }
    }

    /// The devices this service drives: available here, by node.
    static func driven(_ round: Round) -> [(node: String, id: String)] {
        round.plan.devices.filter { $0.device.availability == .available }.map {
            (FleetDiscovery.node(udid: $0.device.udid?.value, id: $0.device.id), $0.device.id)
        }
    }

    /// Claims the devices this service drives (retained `<prefix>/<node>/host`), and says which another
    /// host claims too: both would act on their commands.
    func claim(round: Round, claims: FleetClaims, publishing: StatusPublishing) async {
        let driven = Self.driven(round)
        await publishing.retain(driven.map { ($0.node, "host", claims.me) })
        for device in driven {
            await claims.saw(node: device.node, host: claims.me)
            await sayShared(device.node, id: device.id, claims: claims, publishing: publishing)
        }
    }

    func sayShared(_ node: String, id: String, claims: FleetClaims, publishing: StatusPublishing) async {
        let others = await claims.others(of: node)
        guard !others.isEmpty else { return }
        let line =
            "claimed by another host too (\(others.joined(separator: ", "))): both would act on its commands — "
            + "keep it in one host's devices.yaml"
        context.message("warning: \(id) is \(line)")
        await publishing.say(line, node: node)
    }

    /// Relaunches, as the Relaunch button does, each device whose watchdog is due: its app not running,
    /// or its dashboard not loaded, for `after` rounds in a row, at most `perHour` times an hour.
    func watch(
        _ report: StatusReport, round: Round, dog: WatchdogState, commands: FleetCommands,
        publishing: StatusPublishing, latest: LatestRound, actions: FleetActions
    ) async {
        for status in report.devices where status.reachable {
            guard let rule = round.watchdogs[status.id],
                let planned = round.plan.devices.first(where: { $0.device.id == status.id })
            else { continue }
            let down = status.running.value == false || status.dashboard.value?.loaded == false
            let node = FleetDiscovery.node(udid: planned.device.udid?.value, id: status.id)
            switch await dog.observe(status.id, down: down, rule: rule, now: context.clock.now()) {
            case .fine:
                continue
            case .limit(let count):
                let line =
                    "watchdog: not relaunched — \(count) relaunch(es) in the last hour already (per_hour: \(rule.perHour))"
                context.message("\(status.id): \(line)")
                await publishing.say(line, node: node)
            case .relaunch(let count):
                let busy = await actions.start(
                    status.id, .relaunch,
                    {
                        await perform(
                            .relaunch, device: status.id, node: node, status: status,
                            who: "the watchdog (\(count) of \(rule.perHour) this hour)", commands: commands,
                            publishing: publishing)
                    }, then: { await refreshed(latest) })
                if let busy {
                    context.message("\(status.id): watchdog: not relaunched, \(busy.rawValue) is running")
                }
            }
        }
    }

    /// Takes commands from the broker until cancelled, connecting again after a failure.
    func listen(
        _ commands: FleetCommands, publishing: StatusPublishing, latest: LatestRound, actions: FleetActions,
        claims: FleetClaims
    ) async {
        let publisher = publishing.publisher
        let topics = publisher.discovery.topics
        var said = false
        while !Task.isCancelled {
            let client = MQTTClient(
                broker: publisher.broker, clientID: publisher.clientID + "-commands",
                stepDeadline: publisher.stepDeadline, clock: publisher.clock)
            do {
                try await client.connect()
                try await client.subscribe([topics.commands, topics.claims])
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
                    if let node = topics.claim(in: message.topic) {
                        await claims.saw(node: node, host: String(decoding: message.payload, as: UTF8.self))
                        let (round, _) = await latest.value
                        if let id = Self.driven(round).first(where: { $0.node == node })?.id {
                            await sayShared(node, id: id, claims: claims, publishing: publishing)
                        }
                        continue
                    }
                    await handle(
                        message, commands: commands, publishing: publishing, latest: latest, actions: actions)
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
    }

    /// One message: checked (`FleetCommandRequest`), then acted on for its device unless it is busy.
    func handle(
        _ message: MQTTMessage, commands: FleetCommands, publishing: StatusPublishing, latest: LatestRound,
        actions: FleetActions
    ) async {
        let (round, report) = await latest.value
        let request: FleetCommandRequest
        switch FleetCommandRequest.read(
            message, topics: publishing.publisher.discovery.topics, plan: round.plan)
        {
        case .success(let value): request = value
        case .failure(.retained(let device, let key)):
            context.message("\(device): a retained \(key) command was not acted on (only a live one acts)")
            return
        case .failure(.unknown(let device, let key)):
            context.message("\(device): an unknown command (\(key)) was not acted on")
            return
        case .failure: return
        }
        let status = report?.devices.first { $0.id == request.device }
        let busy = await actions.start(
            request.device, request.command,
            {
                await perform(
                    request.command, device: request.device, node: request.node, status: status,
                    who: "Home Assistant", commands: commands, publishing: publishing)
            }, then: { await refreshed(latest) })
        if let busy {
            let line = "\(request.command.rawValue) not started: \(busy.rawValue) is running"
            context.message("\(request.device): \(line)")
            await publishing.say(line, node: request.node)
        }
    }

    /// One command on one device, said in its Last command sensor before and after. `status`: the
    /// device's last status.
    func perform(
        _ command: FleetCommands.Command, device: String, node: String, status: DeviceStatus?, who: String,
        commands: FleetCommands, publishing: StatusPublishing
    ) async {
        let name = command.rawValue
        let prefix = who == "Home Assistant" ? name : "\(name) by \(who)"
        await publishing.say("\(prefix): running", node: node)
        let line: String
        switch command {
        case .refresh:
            line = "done"
        case .relaunch where status.map({ $0.build == .outdated || $0.build == .missing }) == true:
            // A relaunch installs nothing: a device without the configured build is told so.
            line =
                "not relaunched: the installed build is not \(status?.expected.build.description ?? "the configured one")"
                + " — use Install"
        default:
            await deviceWork.acquire()
            line = await commands.act(command, device)
            await deviceWork.release()
        }
        context.message("\(device): \(name) from \(who): \(line)")
        await publishing.say("\(prefix): \(line)", node: node)
    }

    /// The status now, published (after a command: an install's version shows at once).
    func refreshed(_ latest: LatestRound) async {
        let (now, _) = await latest.value
        if let (result, _) = await cycle(now) { await latest.set(result) }
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

/// Each watched device's rounds down in a row and its relaunches in the last hour.
actor WatchdogState {
    enum Verdict: Equatable {
        case fine
        /// Relaunch now: the `n`th relaunch of the hour.
        case relaunch(Int)
        /// Due, but the hour's relaunches are used up (said once a streak).
        case limit(Int)
    }

    private var down: [String: Int] = [:]
    private var relaunches: [String: [Date]] = [:]
    private var saidLimit: Set<String> = []

    func observe(_ id: String, down isDown: Bool, rule: Watchdog, now: Date) -> Verdict {
        guard isDown else {
            down[id] = 0
            saidLimit.remove(id)
            return .fine
        }
        down[id, default: 0] += 1
        guard down[id, default: 0] >= rule.after else { return .fine }
        let recent = (relaunches[id] ?? []).filter { now.timeIntervalSince($0) < 3600 }
        relaunches[id] = recent
        guard recent.count < rule.perHour else {
            return saidLimit.insert(id).inserted ? .limit(recent.count) : .fine
        }
        relaunches[id] = recent + [now]
        down[id] = 0
        return .relaunch(recent.count + 1)
    }
}
