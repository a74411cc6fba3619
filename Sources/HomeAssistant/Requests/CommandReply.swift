import Foundation

/// A successful reply to a command, undecoded: the whole message as HA sent it
/// (`{"id":…,"type":"result","success":true,"result":…}` or `{"id":…,"type":"pong"}`).
public struct CommandReply: Sendable {
    public let message: Data

    public init(message: Data) { self.message = message }

    /// Decodes the `result` member (`null` decodes as ``EmptyResult`` or ``JSONValue/null``).
    public func decodeResult<T: Decodable>(_ type: T.Type) throws -> T {
        try JSONDecoder().decode(ResultEnvelope<T>.self, from: message).result
    }
}

private struct ResultEnvelope<T: Decodable>: Decodable {
    let result: T

    enum CodingKeys: String, CodingKey { case result }

    init(from decoder: any Decoder) throws {
        let container = try decoder.container(keyedBy: CodingKeys.self)
        if let value = try container.decodeIfPresent(T.self, forKey: .result) {
            result = value
        } else if let empty = EmptyResult() as? T {
            result = empty
        } else if let null = JSONValue.null as? T {
            result = null
        } else {
            throw DecodingError.valueNotFound(
                T.self, .init(codingPath: [CodingKeys.result], debugDescription: "result is null or absent"))
        }
    }
}
