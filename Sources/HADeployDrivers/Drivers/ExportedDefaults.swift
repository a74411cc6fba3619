import Foundation
import HADeployCore

/// A preferences domain as `defaults export` printed it, merged with the launch settings for
/// `defaults import` (simulators and the Mac app alike): the keys sent are set, `removing` keys not
/// sent are dropped, the app's own keys are kept. A domain that could not be exported is empty.
enum ExportedDefaults {
    static func merged(
        _ exported: ProcessOutput, setting values: [String: Any], removing managed: Set<String> = []
    ) throws -> Data {
        var merged: [String: Any] = [:]
        if exported.status == 0,
            let existing = try? PropertyListSerialization.propertyList(
                from: exported.standardOutput, format: nil)
                as? [String: Any]
        {
            merged = existing
        }
        for key in managed where values[key] == nil { merged[key] = nil }
        for (key, value) in values { merged[key] = value }
        return try PropertyListValue.encode(merged, .xml)
    }
}
