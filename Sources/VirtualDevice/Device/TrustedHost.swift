/// A host the device accepted through `Pair` (or pre-pairing); StartSession checks its HostID.
struct TrustedHost: Codable, Sendable, Equatable {
    var hostID: String
    var systemBUID: String?
}
