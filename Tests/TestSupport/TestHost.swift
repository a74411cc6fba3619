import Foundation
import HADeployCore

/// The machine's own effects for tests that need real files, processes or time (a real sshd, a
/// twin, a temporary folder): taken from `HADeployContext.live()`, the one door to them, so no test
/// names a live implementation.
public enum TestHost {
    /// The live context (its output is the test process's stdout and stderr).
    public static let context = HADeployContext.live()
    public static var fileSystem: any FileSystem { context.fileSystem }
    public static var runner: any ProcessRunner { context.runner }
    public static var clock: any WallClock { context.clock }
    /// The test process's environment variables.
    public static var environment: [String: String] { context.environment }
}
