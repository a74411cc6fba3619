/// Type-erased Encodable for building JSON replies.
struct AnyEncodable: Encodable, ExpressibleByBooleanLiteral, ExpressibleByStringLiteral {
    private let encodeValue: (Encoder) throws -> Void

    init(_ value: some Encodable) {
        encodeValue = { try value.encode(to: $0) }
    }

    init(booleanLiteral value: Bool) { self.init(value) }
    init(stringLiteral value: String) { self.init(value) }

    func encode(to encoder: Encoder) throws { try encodeValue(encoder) }
}
