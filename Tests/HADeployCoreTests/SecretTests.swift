import Foundation
import HADeployCore
import Testing

@Suite struct SecretTests {
    let token = "eyJhbGciOi.tok3n-value-that-must-not-leak"

    @Test func everyRenderingIsRedacted() throws {
        let secret = Secret(token)
        #expect("\(secret)" == "***")
        #expect(String(describing: secret) == "***")
        #expect(String(reflecting: secret) == "***")
        let json = String(decoding: try JSONEncoder().encode(["token": secret]), as: UTF8.self)
        #expect(json == #"{"token":"***"}"#)
        #expect(secret.reveal() == token)
        #expect(!secret.isEmpty)
        #expect(Secret("").isEmpty)
    }

    @Test(arguments: [
        ("HA_TOKEN", true), ("ASC_KEY_ID", true), ("ASC_KEY_PATH", true), ("IPAD2_SSH_KEY", true),
        ("IPAD2_SSH_PASSWORD", true), ("client_secret", true), ("GPG_PASSPHRASE", true),
        ("HA_SERVER", false), ("BUNDLE_ID", false), ("IPAD2_UDID", false), ("HA_DASHBOARD", false),
    ])
    func secretKeyNames(key: String, isSecret: Bool) {
        #expect(Secret.isSecretKey(key) == isSecret)
    }
}
