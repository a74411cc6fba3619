import DeployModel
import Foundation
import HADeployCore
import HADeployReporting

/// How to start a hadeploy worker for one USB route: the CLI knows its own executable and builds the
/// command (`hadeploy deploy --plan SHARE --worker`); the Kit writes the share and runs it.
public struct WorkerLauncher: Sendable {
    /// The command running the plan file `share`; `secrets` (the values its plan names) go into the
    /// worker's environment, never on its command line.
    public var command: @Sendable (_ share: URL, _ secrets: [String: String]) -> ProcessCommand

    public init(command: @escaping @Sendable (_ share: URL, _ secrets: [String: String]) -> ProcessCommand) {
        self.command = command
    }
}

/// The devices of one USB route, deployed by a worker process.
struct WorkerGroup: Sendable {
    var route: USBRoute
    var devices: [String]
    var command: ProcessCommand

    /// Runs the worker, forwarding its JSON Lines events to `reporter` as they arrive; returns the
    /// results it reported. A device the worker never finished gets a failed result with its words.
    func run(
        plan: DeployPlan, runner: any ProcessRunner, reporter: any DeployReporter, deadline: Duration
    ) async -> [DeviceResult] {
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        let collected = WorkerResults()
        let label = "\(route)"
        var failure: String?
        do {
            let output = try await runner.stream(command, timeout: deadline) { line in
                guard let event = try? decoder.decode(JSONLinesReporter.Line.self, from: Data(line.utf8))
                else {
                    return
                }
                switch event.event {
                case "step_started":
                    if let device = event.device, let step = event.step {
                        reporter.handle(.stepStarted(device: device, step: step))
                    }
                case "step_finished":
                    if let device = event.device, let step = event.step {
                        reporter.handle(
                            .stepFinished(
                                device: device, step: step, seconds: event.seconds ?? 0,
                                status: event.status ?? .failed, detail: event.detail))
                    }
                case "progress":
                    if let device = event.device, let progress = event.progress {
                        reporter.handle(
                            .progress(device: device, progress, bytesPerSecond: event.bytesPerSecond ?? 0))
                    }
                case "message":
                    if let message = event.message { reporter.handle(.message("[\(label)] \(message)")) }
                case "device_finished":
                    if let result = event.result {
                        collected.add(result)
                        reporter.handle(.deviceFinished(result))
                    }
                default:
                    break
                }
            }
            let words = output.stderr.split(separator: "\n").last.map(String.init) ?? ""
            failure =
                "the worker for \(label) exited with status \(output.status) without a result for this device"
                + (words.isEmpty ? "" : ": \(command.redact(words))")
        } catch {
            failure = "the worker for \(label) failed: \(error)"
        }
        var results = collected.all
        for id in devices where !results.contains(where: { $0.id == id }) {
            guard let device = plan.devices.first(where: { $0.id == id }) else { continue }
            let result = DeviceResult(
                id: device.id, name: device.name, ios: device.ios, transport: device.backend.label,
                version: plan.version.description, outcome: .failed,
                reason: failure ?? "the worker for \(label) ended without a result for this device",

                failedStep: nil, install: nil, verification: .notRun, steps: [], screenshot: nil,
                crashReports: [], seconds: 0)
            results.append(result)
            reporter.handle(.deviceFinished(result))
        }
        return results
    }
}

/// What a worker reported, gathered from the stream's callback.
final class WorkerResults: @unchecked Sendable {
    private let lock = NSLock()
    private var results: [DeviceResult] = []

    func add(_ result: DeviceResult) { lock.withLock { results.append(result) } }
    var all: [DeviceResult] { lock.withLock { results } }
}
