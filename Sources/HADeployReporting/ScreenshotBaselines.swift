import DeployModel
import Foundation
import HADeployCore

/// Each device's last good screenshot of each dashboard (`.hadeploy/baselines/<device>/<dashboard>.png`),
/// kept with the project's device state, not in a report folder a CI job throws away. Twins
/// (`--virtual`) keep theirs apart (`.hadeploy/twin-baselines`): a twin's screen is not the iPad's.
public struct ScreenshotBaselines: Sendable {
    public let directory: URL
    let fileSystem: any FileSystem

    public init(directory: URL, fileSystem: any FileSystem) {
        self.directory = directory
        self.fileSystem = fileSystem
    }

    public static func project(_ context: HADeployContext, virtual: Bool) -> ScreenshotBaselines {
        ScreenshotBaselines(
            directory: context.url(for: virtual ? ".hadeploy/twin-baselines" : ".hadeploy/baselines"),
            fileSystem: context.fileSystem)
    }

    /// The key a device's dashboard is kept under (see `VisualCheck.dashboard`).
    static func dashboardKey(_ target: DashboardTarget) -> String {
        switch target {
        case .named(let name): return name
        case .appDefault: return "default"
        case .unchanged: return "unchanged"
        }
    }

    func file(device: String, dashboard: String) -> URL {
        directory.appendingPathComponent(PathNames.component(device))
            .appendingPathComponent(PathNames.component(dashboard) + ".png")
    }

    /// The baseline's bytes; nil when there is none. Throws, saying why, for one that is there but is
    /// not a regular file (a folder, a FIFO, a device), is larger than any screenshot can be, or
    /// cannot be read: that device's comparison is unavailable, the run goes on.
    func read(device: String, dashboard: String) throws -> Data? {
        try Self.readPicture(file(device: device, dashboard: dashboard), fileSystem: fileSystem)
    }

    /// The most bytes a screenshot file is read into memory: a PNG of the largest image the codec
    /// decodes, stored without compression, fits.
    public static let maximumBytes = 128 << 20

    /// A picture file's bytes (the final link not followed: a symbolic link is refused); nil when
    /// nothing is there.
    static func readPicture(_ url: URL, fileSystem: any FileSystem) throws -> Data? {
        let attributes: [FileAttributeKey: Any]
        do {
            attributes = try fileSystem.attributesOfItem(atPath: url.path)
        } catch {
            if !fileSystem.fileExists(atPath: url.path) { return nil }
            throw PictureProblem("it cannot be read (\(SystemErrorText.message(error)))")
        }
        if let type = attributes[.type] as? FileAttributeType, type != .typeRegular {
            throw PictureProblem("it is not a regular file (it is \(SystemErrorText.kind(type)))")
        }
        if let size = (attributes[.size] as? NSNumber)?.int64Value, size > maximumBytes {
            throw PictureProblem(
                "it is \(size) bytes, more than the \(maximumBytes >> 20) MB a screenshot can be")
        }
        guard let data = fileSystem.contents(atPath: url.path) else {
            throw PictureProblem("it cannot be read")
        }
        return data
    }

    func write(_ png: Data, device: String, dashboard: String) throws {
        let url = file(device: device, dashboard: dashboard)
        try fileSystem.createDirectory(
            at: url.deletingLastPathComponent(), withIntermediateDirectories: true, attributes: nil)
        try fileSystem.write(png, to: url, options: .atomic)
    }
}

/// Why a picture file is not read.
struct PictureProblem: Error, CustomStringConvertible {
    var description: String
    init(_ description: String) { self.description = description }
}
