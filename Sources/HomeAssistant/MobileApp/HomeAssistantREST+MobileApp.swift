import Foundation

/// The mobile_app integration as an app uses it (registration, then webhook messages such as
/// `register_sensor` and `update_sensor_states`).
extension HomeAssistantREST {
    /// `POST /api/mobile_app/registrations` (bearer auth) with the app's registration body.
    public func registerMobileApp(_ body: [String: JSONValue]) async throws -> MobileAppRegistration {
        let path = "api/mobile_app/registrations"
        let (status, response) = try await call(
            .POST, path, body: try JSONEncoder().encode(JSONValue.object(body)))
        try check(status, path)
        return try decode(MobileAppRegistration.self, response, path)
    }

    /// `POST /api/webhook/<id>` with `{type, data}`, without bearer auth (the id is the credential).
    /// Returns the HTTP status as it is (410 = the registration is gone) and the JSON body, if any.
    public func sendWebhook(_ webhookID: String, type: String, data: JSONValue) async throws
        -> (status: UInt, body: JSONValue?)
    {
        let allowed = webhookID.allSatisfy { $0.isLetter || $0.isNumber || $0 == "_" || $0 == "-" }
        guard allowed, !webhookID.isEmpty else {
            throw HomeAssistantError(
                .commandFailed(code: "invalid_webhook_id"), server: options.server.baseURL,
                message: "'\(webhookID)' is not a webhook id")
        }
        let payload: JSONValue = ["type": .string(type), "data": data]
        let (status, body) = try await call(
            .POST, "api/webhook/" + webhookID, body: try JSONEncoder().encode(payload), authorized: false)
        return (status, try? JSONDecoder().decode(JSONValue.self, from: body))
    }
}
