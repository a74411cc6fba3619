import HADeployCore

/// The dictionary templates are rendered with: `.env` values, overridden by the process environment
/// (so CI secrets work without a file).
public enum TemplateValues {
    public static func merge(dotEnv: DotEnv, environment: [String: String]) -> [String: String] {
        var values = dotEnv.values
        for (key, value) in environment { values[key] = value }
        return values
    }
}
