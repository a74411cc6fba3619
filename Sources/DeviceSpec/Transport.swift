/// A `transport:` word of devices.yaml (`usb`, `ssh`, …): how a device is reached. DeviceSpec knows
/// no words of its own: each backend declares the words it takes and what they mean
/// (`TransportWord`), and the loader checks devices.yaml against them (`TransportVocabulary`). Coded as
/// the word itself (the standard library's coding of a `RawRepresentable`).
public struct Transport: RawRepresentable, Hashable, Codable, Sendable, CustomStringConvertible,
    ExpressibleByStringLiteral
{
    public var rawValue: String

    public init(rawValue: String) { self.rawValue = rawValue }
    public init(stringLiteral value: String) { rawValue = value }

    public var description: String { rawValue }
}

/// What a `transport:` word means to devices.yaml, as the backend that takes it declares it: the kind
/// of device it drives and the keys it needs, allows or changes.
public struct TransportWord: Sendable, Hashable {
    public var word: Transport
    public var drives: DeviceKind
    /// `host:` is needed (an SSH login).
    public var needsHost = false
    /// `network:` / `address:` are allowed: the device may be reached over Wi-Fi through a usbmuxd's
    /// network lookup.
    public var wifi = false
    /// `model:` is allowed: the device may be found by the model its tool lists.
    public var findsByModel = false
    /// The Mac itself, running the Mac Catalyst build: `ios:` may be left out, the flavour is a
    /// `maccatalyst` one.
    public var thisMac = false
    /// The oldest iOS major version it drives, and the word for older ones.
    public var oldestIOS: Int?
    public var olderIOSWord: Transport?

    public init(
        _ word: Transport, drives: DeviceKind, needsHost: Bool = false, wifi: Bool = false,
        findsByModel: Bool = false, thisMac: Bool = false, oldestIOS: Int? = nil,
        olderIOSWord: Transport? = nil
    ) {
        self.word = word
        self.drives = drives
        self.needsHost = needsHost
        self.wifi = wifi
        self.findsByModel = findsByModel
        self.thisMac = thisMac
        self.oldestIOS = oldestIOS
        self.olderIOSWord = olderIOSWord
    }
}

/// Every `transport:` word devices.yaml may use, in the order they are listed to people.
public struct TransportVocabulary: Sendable, Hashable {
    public var words: [TransportWord]

    public init(_ words: [TransportWord]) {
        var seen: Set<Transport> = []
        self.words = words.filter { seen.insert($0.word).inserted }
    }

    public func word(_ transport: Transport) -> TransportWord? {
        words.first { $0.word == transport }
    }

    public var names: [String] { words.map(\.word.rawValue) }

    /// The words whose `property` holds, as a sentence lists them (`usb and devicectl`).
    func listing(_ property: (TransportWord) -> Bool) -> String {
        let names = words.filter(property).map(\.word.rawValue)
        guard names.count > 1 else { return names.first ?? "none" }
        return names.dropLast().joined(separator: ", ") + " and " + names[names.count - 1]
    }
}
