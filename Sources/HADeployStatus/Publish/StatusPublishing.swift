import DeployModel
import Foundation
import HADeployCore
import HADeployKit
import MQTT

/// `status --publish`: the broker and topics resolved from the command line and the variables, and
/// one status report published to Home Assistant through MQTT discovery. What goes wrong is one line
/// and an exit status, never a stack of errors: the status itself is printed either way.
public struct StatusPublishing: Sendable {
    /// A publish that did not happen: the line to print and the exit status.
    public struct Problem: Error, Sendable, CustomStringConvertible, ExitStatusProviding {
        public var message: String
        public var exitStatus: ExitStatus
        public var exitCode: Int32 { exitStatus.rawValue }
        public var description: String { message }
    }

    public var publisher: FleetPublisher

    /// `url`: `--publish URL`, else `MQTT_URL` from `variables` (`.env` under the environment);
    /// `MQTT_CA_FILE`: a PEM CA for `mqtts://`. A mistake on the command line is a usage error (64),
    /// one in MQTT_URL a configuration error (78).
    public init(
        url: String?, discoveryPrefix: String, topicPrefix: String, variables: [String: String],
        context: HADeployContext, recordDirectory: URL, deadlineSeconds: Double, everySeconds: Int? = nil,
        commands: Bool = false
    ) throws(Problem) {
        let fromCommandLine = url != nil
        let text = url ?? variables["MQTT_URL"] ?? ""
        let broker: MQTTBroker
        let topics: FleetTopics
        do {
            topics = try FleetTopics(discoveryPrefix: discoveryPrefix, topicPrefix: topicPrefix)
        } catch {
            throw Problem(message: "cannot publish: \(SystemErrorText.message(error))", exitStatus: .usage)
        }
        do {
            let caFile = variables["MQTT_CA_FILE"].flatMap { $0.isEmpty ? nil : context.url(for: $0).path }
            broker = try MQTTBroker(url: text, caFile: caFile)
        } catch {
            throw Problem(
                message: "cannot publish: \(SystemErrorText.message(error))",
                exitStatus: fromCommandLine ? .usage : .config)
        }
        // Home Assistant marks the entities unavailable when three runs went by without a state.
        let discovery = FleetDiscovery(
            topics: topics, expireAfterSeconds: everySeconds.map { $0 * 3 }, commands: commands)
        publisher = FleetPublisher(
            broker: broker, discovery: discovery,
            recordFile: recordDirectory.appendingPathComponent(
                FleetPublisher.recordName(broker: broker, topics: topics)),
            fileSystem: context.fileSystem, clock: context.clock,
            stepDeadline: .checkedSeconds(deadlineSeconds),
            clientID: "hadeploy-\(context.system.processIdentifier)")
    }

    /// The broker as it may be shown (`mqtt://user@host:port`).
    public var broker: String { publisher.broker.description }

    /// The Last command sensor of `node` says `line` (`--commands`): one retained message on a short
    /// connection of its own, one at a time (the broker would drop an earlier one of the same id).
    public func say(_ line: String, node: String) async {
        await retain([(node, "last_command", FleetEntity.text(line))])
    }

    /// `(node, key, text)` as retained states, on a short connection of its own (`say`); what cannot be
    /// sent is left to the next round.
    func retain(_ states: [(node: String, key: String, text: String)]) async {
        guard !states.isEmpty else { return }
        await Self.saying.acquire()
        let client = MQTTClient(
            broker: publisher.broker, clientID: publisher.clientID + "-say",
            stepDeadline: publisher.stepDeadline,
            clock: publisher.clock)
        do {
            try await client.connect()
            for state in states {
                try await client.publish(
                    MQTTMessage(
                        topic: publisher.discovery.topics.state(node: state.node, key: state.key),
                        text: state.text,
                        retain: true))
            }
        } catch {
            // The next round's status is published anyway; a lost line is not worth a stop.
        }
        await client.disconnect()
        await Self.saying.release()
    }

    static let saying = SerialGate()

    /// Publishes `report`: each device of `plan` this host can reach, with its last good screenshot
    /// from `records`. `configured`: every device id in devices.yaml (a device published before and
    /// not in it is removed; nil: none is, as for a plan file). `deploy`: the run that just deployed
    /// these devices, whose outcome each one's `Last deploy` shows.
    public func publish(
        _ report: StatusReport, plan: StatusPlan, records: DeployRecords, configured: Set<String>?,
        deploy: DeployReport? = nil, releases: [String: PublishedRelease] = [:]
    ) async throws(Problem) -> FleetPublisher.Summary {
        var devices: [PublishedDevice] = []
        for status in report.devices where status.notOnThisHost == nil {
            guard let planned = plan.devices.first(where: { $0.device.id == status.id }) else { continue }
            let result = deploy?.results.first { $0.id == status.id }
            devices.append(
                PublishedDevice(
                    id: status.id,
                    node: FleetDiscovery.node(udid: planned.device.udid?.value, id: status.id),
                    model: planned.device.productType, status: status,
                    screenshot: records.screenshot(device: status.id).map { Array($0) },
                    lastDeploy: deploy.flatMap { report in
                        result.map { PublishedDeploy($0, finishedAt: report.finishedAt) }
                    }, release: releases[status.expected.marketingVersion]))
        }
        do {
            return try await publisher.publish(devices, configured: configured)
        } catch let error as MQTTError {
            let status: ExitStatus
            if case .invalidConfiguration = error.kind { status = .config } else { status = .notPublished }
            throw Problem(message: "not published: \(error.message)", exitStatus: status)
        } catch {
            throw Problem(
                message: "not published: \(SystemErrorText.message(error))", exitStatus: .notPublished)
        }
    }

    /// `deploy --publish`: once the deploy is done (its twins still running), each deployed device's
    /// status, read as `status` reads it, published with this deploy's outcome and the screenshot it
    /// recorded. A device the deploy never reached is published unavailable, as `status` does.
    public func publish(
        deploy: DeployReport, session: StatusSession, configured: Set<String>?
    ) async throws(Problem) -> FleetPublisher.Summary {
        let plan: StatusPlan
        do {
            plan = try session.plan()
        } catch {
            throw Problem(
                message: "not published: the devices' status could not be planned: "
                    + SystemErrorText.message(error),
                exitStatus: .notPublished)
        }
        let deployed = Set(deploy.results.map(\.id))
        var wanted = plan
        wanted.devices = plan.devices.filter { deployed.contains($0.device.id) }
        let status = await session.run(wanted)
        return try await publish(
            status, plan: wanted, records: session.records, configured: configured, deploy: deploy)
    }

    /// The line saying what was published.
    public func line(_ summary: FleetPublisher.Summary) -> String {
        var line = "published \(summary.published.count) device(s) to \(broker)"
        if !summary.unavailable.isEmpty {
            line += " (unavailable: \(summary.unavailable.joined(separator: ", ")))"
        }
        if !summary.removed.isEmpty {
            line += "; removed from Home Assistant: \(summary.removed.joined(separator: ", "))"
        }
        return line
    }
}
