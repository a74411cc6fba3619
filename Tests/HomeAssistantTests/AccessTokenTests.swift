import Foundation
import HomeAssistant
import TestSupport
import Testing

@Suite("Token redaction")
struct AccessTokenTests {
    @Test("the token prints, interpolates and dumps as ***")
    func redacted() {
        let token = AccessToken("eyJ-very-secret-value")
        #expect("\(token)" == "***")
        #expect(String(describing: token) == "***")
        #expect(String(reflecting: token) == "***")
        var dumped = ""
        dump(token, to: &dumped)
        #expect(!dumped.contains("very-secret"))
        var options = ClientOptions(
            server: try! ServerAddress("http://127.0.0.1:1/"), token: token, clock: TestHost.clock)
        options.caFile = nil
        #expect(!"\(options)".contains("very-secret"))
        #expect(token.reveal() == "eyJ-very-secret-value")
    }
}
