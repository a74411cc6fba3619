/// The members of an incoming message the connection routes by; the rest stays undecoded until
/// the request or subscription that owns it decodes it.
struct IncomingHeader: Decodable {
    struct ErrorBody: Decodable {
        let code: String?
        let message: String?
    }

    let id: Int?
    let type: String
    let success: Bool?
    let error: ErrorBody?
    let haVersion: String?
    let message: String?

    enum CodingKeys: String, CodingKey {
        case id, type, success, error, message
        case haVersion = "ha_version"
    }
}
