import HADeployCore

/// Why a version could not be derived.
public enum VersioningError: Error, CustomStringConvertible, ExitStatusProviding {
    case notARepository(path: String)
    case noCommits(path: String)
    case shallowClone(commitCount: Int)
    case git(String)
    /// The build number does not exceed the floor App Store Connect requires (the app's
    /// `APP_STORE_BUILD_NUMBER_FLOOR`, 162: builds up to it were uploaded before).
    case belowBuildNumberFloor(build: Int, floor: Int)
    /// `APP_STORE_BUILD_NUMBER_FLOOR` is not a whole number.
    case invalidBuildNumberFloor(String)

    public var description: String {
        switch self {
        case .notARepository(let path):
            return "\(path) is not inside a git repository: the version comes from git tags and the "
                + "commit count. Run hadeploy from the app's git checkout (or `git init` and commit)."
        case .noCommits(let path):
            return "the git repository at \(path) has no commits yet: commit once, then tag a release "
                + "with `git tag v1.0.0`."
        case .shallowClone(let count):
            return "this is a shallow clone (\(count) commit(s) visible), so the build number would be "
                + "wrong. Fetch the full history: `git fetch --unshallow` (GitHub Actions: "
                + "`actions/checkout` with `fetch-depth: 0`), or pass --allow-shallow to accept it."
        case .git(let message):
            return "git failed: \(message)"
        case .belowBuildNumberFloor(let build, let floor):
            return
                "build \(build) does not exceed \(BuildNumberFloor.variable) (\(floor)): App Store Connect "
                + "refuses a build number it has seen, and the build number is the commit count — release "
                + "from the full history of main (`git fetch --unshallow`), never from a fresh or squashed repository"
        case .invalidBuildNumberFloor(let text):
            return "\(BuildNumberFloor.variable) is '\(text)', not a whole number (the app sets 162)"
        }
    }

    public var exitStatus: ExitStatus { .config }
}
