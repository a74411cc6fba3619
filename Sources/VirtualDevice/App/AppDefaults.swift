import Foundation
import HADeployCore

/// `NSUserDefaults` as the HA Dashboard app sees it: the argument domain (`-Key value` launch
/// arguments, never saved) searched before the app's own domain, which lives in
/// `Library/Preferences/<bundle id>.plist` and is what a deploy tool without launch arguments
/// (rosettasim-ctl, the jailbreak's `open`) writes into.
struct AppDefaults {
    private let arguments: [String: Any]
    private var persistent: [String: Any]
    private let store: PropertyListFile

    init(arguments: [String], file: URL, fileSystem: any FileSystem) {
        self.arguments = Self.argumentDomain(arguments)
        store = PropertyListFile(url: file, fileSystem: fileSystem)
        persistent = store.read(Any.self) ?? [:]
    }

    var file: URL { store.url }

    /// NSUserDefaults parses each `-Key value` pair; a value that reads as a property list becomes
    /// that object, anything else stays a string (`-HADashboard ""` is the empty string).
    static func argumentDomain(_ arguments: [String]) -> [String: Any] {
        var domain: [String: Any] = [:]
        var index = 0
        while index < arguments.count {
            let argument = arguments[index]
            if argument.count > 1, argument.hasPrefix("-"), index + 1 < arguments.count {
                domain[String(argument.dropFirst())] = arguments[index + 1]
                index += 2
            } else {
                index += 1
            }
        }
        return domain
    }

    func object(_ key: String) -> Any? { arguments[key] ?? persistent[key] }

    func has(_ key: String) -> Bool { object(key) != nil }

    /// `stringForKey:`: strings as they are, numbers as their text.
    func string(_ key: String) -> String? {
        switch object(key) {
        case let text as String: return text
        case let number as NSNumber: return number.stringValue
        default: return nil
        }
    }

    /// `boolForKey:`: YES/true/1 (any case) or a non-zero number.
    func bool(_ key: String) -> Bool {
        switch object(key) {
        case let text as String:
            return ["yes", "true", "1"].contains(text.lowercased()) || (Int(text) ?? 0) != 0
        case let number as NSNumber: return number.boolValue
        default: return false
        }
    }

    func integer(_ key: String) -> Int {
        switch object(key) {
        case let text as String: return Int(text) ?? 0
        case let number as NSNumber: return number.intValue
        default: return 0
        }
    }

    /// Writes into the app's own domain (the argument domain is read-only).
    mutating func set(_ value: Any?, for key: String) {
        persistent[key] = value
    }

    func save() throws {
        try store.write(persistent)
    }
}
