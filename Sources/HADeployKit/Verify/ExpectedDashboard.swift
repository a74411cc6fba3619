import HomeAssistant

/// What the app should end up showing for the dashboard hadeploy asked for, as Home Assistant
/// has it now.
public enum ExpectedDashboard: Sendable, Hashable, CustomStringConvertible {
    /// A saved dashboard: the app logs this shape when it receives it.
    case shape(LovelaceShape)
    /// A dashboard nobody saved (the default one, usually): Home Assistant generates it, and so
    /// does the app.
    case generatedDefault

    public var description: String {
        switch self {
        case .shape(let shape): return shape.description
        case .generatedDefault: return "no saved config (a generated dashboard)"
        }
    }
}
