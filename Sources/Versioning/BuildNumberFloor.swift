/// The app's release rule: CFBundleVersion (the commit count) must be greater than
/// `APP_STORE_BUILD_NUMBER_FLOOR` (162 in the app's release workflow: App Store Connect already has
/// builds up to it). Set in `.env` or the environment, `hadeploy version` checks it.
public enum BuildNumberFloor {
    public static let variable = "APP_STORE_BUILD_NUMBER_FLOOR"

    /// Throws when `variables` set a floor that `version` does not exceed (or one that is no number).
    public static func check(_ version: GitVersion, variables: [String: String]) throws {
        guard let text = variables[variable]?.trimmingCharacters(in: .whitespaces), !text.isEmpty else {
            return
        }
        guard let floor = Int(text), floor >= 0 else { throw VersioningError.invalidBuildNumberFloor(text) }
        if version.buildNumber <= floor {
            throw VersioningError.belowBuildNumberFloor(build: version.buildNumber, floor: floor)
        }
    }
}
