import Foundation

/// What the orchestrator reports while it runs; reporters turn these into terminal lines or JSON Lines.
public enum DeployEvent: Sendable {
    case runStarted(deployID: String, version: String, devices: [String])
    case message(String)
    case stepStarted(device: String, step: String)
    case progress(device: String, TransferProgress, bytesPerSecond: Double)
    case stepFinished(device: String, step: String, seconds: Double, status: StepStatus, detail: String?)
    case deviceFinished(DeviceResult)
    case runFinished(DeployReport)
}

/// Receives events; implementations must be cheap and thread-safe.
public protocol DeployReporter: Sendable {
    func handle(_ event: DeployEvent)
}
