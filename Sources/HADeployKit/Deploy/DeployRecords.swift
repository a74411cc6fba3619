import DeployModel
import Foundation
import HADeployCore

/// What the last deploy from this project installed on each device
/// (`.hadeploy/deployed/<device id>.json`), so `hadeploy rollback DEVICE` knows which app to put
/// back without `--bundle-id` or `BUNDLE_ID` (a deploy with `--artifact` needs neither).
public struct DeployRecords: Sendable {
    public struct Record: Codable, Sendable, Equatable {
        public var bundleID: String
        public var marketingVersion: String
        public var buildNumber: String
        public var deployID: String
        public var deployedAt: Date
        /// When a deploy last proved the dashboard loaded on this device (this one or an earlier one
        /// of the same app; nil: never). Records from before `hadeploy status` have none.
        public var verifiedAt: Date?
    }

    public let directory: URL
    public let fileSystem: any FileSystem

    public init(directory: URL, fileSystem: any FileSystem) {
        self.directory = directory
        self.fileSystem = fileSystem
    }

    /// The project's records: `<project>/.hadeploy/deployed`.
    public static func project(_ context: HADeployContext) -> DeployRecords {
        DeployRecords(directory: context.url(for: ".hadeploy/deployed"), fileSystem: context.fileSystem)
    }

    /// The virtual twins' records (`--virtual`), next to the twins' own state and apart from the real
    /// devices': `rollback` never takes a twin's app for the real device's.
    public static func twins(_ context: HADeployContext, stateDirectory: URL) -> DeployRecords {
        DeployRecords(
            directory: stateDirectory.appendingPathComponent("twins-deployed"), fileSystem: context.fileSystem
        )
    }

    func file(_ device: String) -> URL? {
        guard ArtifactNames.pathComponentProblem(device, what: "device id") == nil else { return nil }
        return directory.appendingPathComponent("\(device).json")
    }

    public func read(device: String) -> Record? {
        guard let file = file(device), let data = fileSystem.contents(atPath: file.path) else { return nil }
        let decoder = JSONDecoder()
        decoder.dateDecodingStrategy = .iso8601
        return try? decoder.decode(Record.self, from: data)
    }

    public func write(_ record: Record, device: String) throws {
        guard let file = file(device) else { return }
        try fileSystem.createDirectory(at: directory, withIntermediateDirectories: true)
        let encoder = JSONEncoder()
        encoder.dateEncodingStrategy = .iso8601
        encoder.outputFormatting = [.prettyPrinted, .sortedKeys]
        try fileSystem.write(encoder.encode(record), to: file, options: .atomic)
    }

    /// The screen of the last deploy that proved the dashboard loaded on `device` (PNG), kept beside
    /// its record (`<id>.png`): what `status --publish` shows as the device's screenshot.
    public func screenshot(device: String) -> Data? {
        guard let file = file(device)?.deletingPathExtension().appendingPathExtension("png") else {
            return nil
        }
        return fileSystem.contents(atPath: file.path)
    }

    /// Keeps `png` as `device`'s screen (the Screenshot button of `status --commands`: the screen now).
    public func keepScreenshot(_ png: Data, device: String) throws {
        guard let file = file(device)?.deletingPathExtension().appendingPathExtension("png") else { return }
        try fileSystem.createDirectory(at: directory, withIntermediateDirectories: true)
        try fileSystem.write(png, to: file, options: .atomic)
    }

    /// Records every device of `report` whose install step ran (installed or unchanged): the app on it
    /// is that flavour's artifact, whatever happened after. A device whose dashboard was proven keeps
    /// that run's screenshot (from `reportDirectory`) as its last good screen.
    func record(
        _ report: DeployReport, plan: DeployPlan, artifacts: [String: Artifact], reportDirectory: URL? = nil
    ) throws {
        let flavours = Dictionary(
            plan.devices.map { ($0.id, $0.flavour) }, uniquingKeysWith: { first, _ in first })
        for result in report.results where result.install != nil {
            guard let flavour = flavours[result.id], let artifact = artifacts[flavour],
                !artifact.bundleID.isEmpty
            else { continue }
            var verifiedAt: Date?
            if case .loaded = result.verification {
                verifiedAt = report.finishedAt
                if let reportDirectory, let screenshot = result.screenshot,
                    let png = fileSystem.contents(
                        atPath: reportDirectory.appendingPathComponent(screenshot).path),
                    let file = file(result.id)?.deletingPathExtension().appendingPathExtension("png")
                {
                    try fileSystem.createDirectory(at: directory, withIntermediateDirectories: true)
                    try fileSystem.write(png, to: file, options: .atomic)
                }
            } else if let previous = read(device: result.id), previous.bundleID == artifact.bundleID {
                verifiedAt = previous.verifiedAt
            }
            try write(
                Record(
                    bundleID: artifact.bundleID, marketingVersion: artifact.marketingVersion,
                    buildNumber: artifact.buildNumber, deployID: report.deployID,
                    deployedAt: report.finishedAt, verifiedAt: verifiedAt),
                device: result.id)
        }
    }
}
