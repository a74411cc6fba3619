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

    func read(device: String, dashboard: String) -> Data? {
        fileSystem.contents(atPath: file(device: device, dashboard: dashboard).path)
    }

    func write(_ png: Data, device: String, dashboard: String) throws {
        let url = file(device: device, dashboard: dashboard)
        try fileSystem.createDirectory(
            at: url.deletingLastPathComponent(), withIntermediateDirectories: true, attributes: nil)
        try fileSystem.write(png, to: url, options: .atomic)
    }
}
