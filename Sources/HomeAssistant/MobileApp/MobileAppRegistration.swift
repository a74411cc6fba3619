/// What `POST /api/mobile_app/registrations` answers: the webhook that carries the device's sensor
/// updates from then on.
public struct MobileAppRegistration: Sendable, Hashable, Codable {
    public let webhookID: String
    public let cloudhookURL: String?
    public let remoteUIURL: String?

    enum CodingKeys: String, CodingKey {
        case webhookID = "webhook_id"
        case cloudhookURL = "cloudhook_url"
        case remoteUIURL = "remote_ui_url"
    }
}
