import HADeployCore

/// A target word the matrix does not know (a usage error, exit 64).
public struct UnknownTargetError: Error, CustomStringConvertible, ExitStatusProviding {
    public var word: String
    public var suggestion: String?
    public var validTargets: [String]

    public var description: String {
        var text = "unknown target '\(word)'"
        if let suggestion { text += " — did you mean '\(suggestion)'?" }
        text += "\nValid targets: " + validTargets.joined(separator: ", ")
        return text
    }

    public var exitStatus: ExitStatus { .usage }
}

/// Turns the words a user typed (`mini4 ipad2`, `sim iphone`, `all`) into devices.
///
/// Multi-word aliases are matched longest first, so `sim iphone` is the iPhone simulator even though
/// `sim` alone is the iPad simulator.
public struct TargetResolver: Sendable {
    public var matrix: DeviceMatrix

    public init(matrix: DeviceMatrix) { self.matrix = matrix }

    static func normalize(_ word: String) -> String {
        word.lowercased().split(whereSeparator: \.isWhitespace).joined(separator: " ")
    }

    /// Every phrase that names something, mapped to the device ids it stands for.
    public var vocabulary: [(phrase: String, devices: [String])] {
        var entries: [(String, [String])] = []
        for device in matrix.devices {
            entries.append((Self.normalize(device.id), [device.id]))
            for alias in device.aliases { entries.append((Self.normalize(alias), [device.id])) }
        }
        for (name, members) in matrix.groups.sorted(by: { $0.key < $1.key }) {
            entries.append((Self.normalize(name), members))
        }
        if matrix.groups["all"] == nil {
            entries.append(("all", matrix.devices.map(\.id)))
        }
        return entries
    }

    /// The words users can type, for help and error messages.
    public var validTargets: [String] {
        var seen = Set<String>()
        return vocabulary.map(\.phrase).filter { seen.insert($0).inserted }
    }

    public func resolve(_ words: [String]) throws -> [Device] {
        let tokens = words.flatMap {
            $0.split(whereSeparator: \.isWhitespace).map { String($0).lowercased() }
        }
        guard !tokens.isEmpty else {
            throw UnknownTargetError(word: "", suggestion: nil, validTargets: validTargets)
        }
        let table = vocabulary
        let longest = table.map { $0.phrase.split(separator: " ").count }.max() ?? 1
        var ids: [String] = []
        var index = 0
        while index < tokens.count {
            var matched = false
            for length in stride(from: min(longest, tokens.count - index), through: 1, by: -1) {
                let phrase = tokens[index..<(index + length)].joined(separator: " ")
                if let entry = table.first(where: { $0.phrase == phrase }) {
                    ids += entry.devices
                    index += length
                    matched = true
                    break
                }
            }
            if !matched {
                let word = tokens[index]
                throw UnknownTargetError(
                    word: word, suggestion: Suggestion.closest(to: word, in: validTargets),
                    validTargets: validTargets)
            }
        }
        var seen = Set<String>()
        return ids.filter { seen.insert($0).inserted }.compactMap { matrix.device(id: $0) }
    }
}
