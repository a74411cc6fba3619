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
        context: HADeployContext, recordDirectory: URL, deadlineSeconds: Double, everySeconds: Int? = nil
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
        let discovery = FleetDiscovery(topics: topics, expireAfterSeconds: everySeconds.map { $0 * 3 })
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

    /// Publishes `report`: each device of `plan` this host can reach, with its last good screenshot
    /// from `records`. `configured`: every device id in devices.yaml.
    public func publish(
        _ report: StatusReport, plan: StatusPlan, records: DeployRecords, configured: Set<String>
    ) async throws(Problem) -> FleetPublisher.Summary {
        var devices: [PublishedDevice] = []
        for status in report.devices where status.notOnThisHost == nil {
            guard let planned = plan.devices.first(where: { $0.device.id == status.id }) else { continue }
            devices.append(
                PublishedDevice(
                    id: status.id,
                    node: FleetDiscovery.node(udid: planned.device.udid?.value, id: status.id),
                    model: planned.device.productType, status: status,
                    screenshot: records.screenshot(device: status.id).map { Array($0) }))
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
}
