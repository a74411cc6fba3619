import Foundation

/// Inputs given as a flag or, as the former test harnesses read them, as an environment variable.
enum BenchEnvironment {
    static func value(_ flag: String?, _ variable: String) -> String? {
        flag ?? ProcessInfo.processInfo.environment[variable]
    }

    static func required(_ flag: String?, _ variable: String, option: String) throws -> String {
        guard let value = value(flag, variable), !value.isEmpty else {
            throw BenchFailure("missing input: pass \(option) or set \(variable)")
        }
        return value
    }

    static func integer(_ flag: Int?, _ variable: String, default fallback: Int) throws -> Int {
        if let flag { return flag }
        guard let text = ProcessInfo.processInfo.environment[variable], !text.isEmpty else { return fallback }
        guard let number = Int(text) else { throw BenchFailure("\(variable)=\(text) is not a whole number") }
        return number
    }
}
