/// `~/…` paths from devices.yaml and `.env`, expanded in one place against the given HOME.
public enum HomePath {
    public static func expand(_ path: String, _ variables: [String: String]) -> String {
        guard path == "~" || path.hasPrefix("~/"), let home = variables["HOME"], !home.isEmpty else {
            return path
        }
        return home + path.dropFirst(1)
    }
}
