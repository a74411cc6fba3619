import DeviceSpec
import Foundation
import HADeployCore

/// How the dashboard check ended for a device.
public enum Verification: Sendable, Hashable, Codable {
    case loaded(seconds: Double)
    case notLoaded(reason: String)
    /// `--no-verify`, or no Home Assistant configured: never counted as passed.
    case skipped(reason: String)
    case notRun
}

/// The outcome of one device.
public enum DeviceOutcome: String, Sendable, Codable {
    case succeeded
    case failed
    /// Deployed and launched, but the dashboard check was skipped.
    case unverified
    /// The device cannot be driven from this host (a simulator on Linux).
    case notAvailable = "not available"
    /// Stopped before it started (Ctrl-C, --fail-fast).
    case cancelled
    /// Installed, but this host cannot launch or screenshot it (iOS 17+ without devicectl or
    /// pymobiledevice3); the reason says what is missing.
    case installedOnly = "installed only"
    /// The run stopped before any device was touched (the preflight refused the token, a build
    /// failed); the reason says why.
    case notStarted = "not started"
}

/// How a step ended (`ok`, `failed`, `skipped` in the `--json` events and the report).
public enum StepStatus: String, Sendable, Hashable, Codable {
    case ok
    case failed
    /// Not run (its reason in the detail): an earlier step decided it, or nothing was to do.
    case skipped
}

public struct StepRecord: Sendable, Hashable, Codable {
    public var name: String
    public var seconds: Double
    public var status: StepStatus
    public var detail: String?

    public init(
        name: String, seconds: Double, status: StepStatus, detail: String? = nil
    ) {
        self.name = name
        self.seconds = seconds
        self.status = status
        self.detail = detail
    }
}

/// Everything the report says about one device.
public struct DeviceResult: Sendable, Hashable, Codable {
    public var id: String
    public var name: String
    public var ios: String
    public var transport: String
    public var version: String
    public var outcome: DeviceOutcome
    public var reason: String?
    public var failedStep: String?
    public var install: InstallOutcome?
    public var verification: Verification
    public var steps: [StepRecord]
    public var screenshot: String?
    public var crashReports: [String]
    public var seconds: Double
    /// What proved the load (app log, Home Assistant, event); nil unless verified.
    public var evidence: [LoadEvidence]? = nil
    /// The screenshot against this device's baseline (nil: no screenshot, or no `--report`).
    public var visual: VisualCheck? = nil

    public init(
        id: String, name: String, ios: String, transport: String, version: String, outcome: DeviceOutcome,
        reason: String? = nil, failedStep: String? = nil, install: InstallOutcome? = nil,
        verification: Verification, steps: [StepRecord], screenshot: String? = nil, crashReports: [String],
        seconds: Double, evidence: [LoadEvidence]? = nil
    ) {
        self.id = id
        self.name = name
        self.ios = ios
        self.transport = transport
        self.version = version
        self.outcome = outcome
        self.reason = reason
        self.failedStep = failedStep
        self.install = install
        self.verification = verification
        self.steps = steps
        self.screenshot = screenshot
        self.crashReports = crashReports
        self.seconds = seconds
        self.evidence = evidence
    }

    /// Whether the device counts as a success for the exit code: a device this host cannot drive at all
    /// (a simulator on Linux) is not a failure, nor one devices.yaml says not to launch (`launch:
    /// false`). A device that was installed but could not be launched or checked (a step failed:
    /// `failedStep`, such as no pymobiledevice3 for the launch) is not a success: CI must see it.
    public var succeeded: Bool {
        outcome == .succeeded || outcome == .unverified || outcome == .notAvailable
            || (outcome == .installedOnly && !launchFailed)
    }

    /// "installed only" because a step after the install could not run on this host.
    public var launchFailed: Bool { outcome == .installedOnly && failedStep != nil }
}

/// The whole run, as written to summary.json.
public struct DeployReport: Sendable, Codable {
    public var deployID: String
    public var version: String
    public var startedAt: Date
    public var finishedAt: Date
    public var verify: Bool
    public var interrupted: Bool
    public var results: [DeviceResult]
    public var exitCode: Int32
    /// Why summary.json, junit.xml and index.html could not be written (nil: written, or not asked
    /// for); such a run exits non-zero even when every device succeeded.
    public var reportProblem: String? = nil
    /// Devices of one screen size showing one dashboard, compared with each other.
    public var parity: [ParityCheck]? = nil

    public init(
        deployID: String, version: String, startedAt: Date, finishedAt: Date, verify: Bool, interrupted: Bool,
        results: [DeviceResult], exitCode: Int32, reportProblem: String? = nil
    ) {
        self.deployID = deployID
        self.version = version
        self.startedAt = startedAt
        self.finishedAt = finishedAt
        self.verify = verify
        self.interrupted = interrupted
        self.results = results
        self.exitCode = exitCode
        self.reportProblem = reportProblem
    }
}

extension DeployReport {
    /// The report of a run that stopped before touching any device: every planned device "not
    /// started", with the reason, so CI still finds summary.json and junit.xml saying what happened.
    public static func notStarted(_ plan: DeployPlan, reason: String, startedAt: Date, finishedAt: Date)
        -> DeployReport
    {
        let results = plan.devices.map { device in
            DeviceResult(
                id: device.id, name: device.name, ios: device.ios, transport: device.transport.rawValue,
                version: plan.version.description, outcome: .notStarted, reason: reason, failedStep: nil,
                install: nil, verification: .notRun, steps: [], screenshot: nil, crashReports: [], seconds: 0)
        }
        return DeployReport(
            deployID: plan.deployID, version: plan.version.description, startedAt: startedAt,
            finishedAt: finishedAt, verify: plan.verify, interrupted: false, results: results,
            exitCode: ExitStatus.failure.rawValue)
    }
}
