import Foundation
import Testing

/// `workout serve --body-limit`: any size text is a clear error or a size, never an overflow trap.
@Suite("workout serve --body-limit")
struct ServeBodyLimitTests {
    @Test(arguments: ["99999999999999GB", "9223372036854775807KB", "99999999999999999999999", "2GB", "1025MB"])
    func aSizeTooLargeIsAClearError(_ size: String) throws {
        let data = ServeCommandTests.temporary("serve-limit")
        defer { try? FileManager.default.removeItem(atPath: data) }
        let (status, output) = try ServeCommandTests.run(["serve", "--db", data, "--port", "0", "--body-limit=\(size)"])
        #expect(status != 0 && status != 4 && status != 132 && status != 133, "exit status \(status): \(output)")
        #expect(output.contains("larger than the largest body limit, 1GB"), "\(output)")
        #expect(!output.contains("Fatal error") && !output.contains("overflow"), "\(output)")
    }

    @Test(arguments: ["0MB", "-5MB", "lots", "MB", "12XB"])
    func aSizeThatIsNoneIsAClearError(_ size: String) throws {
        let data = ServeCommandTests.temporary("serve-limit")
        defer { try? FileManager.default.removeItem(atPath: data) }
        let (status, output) = try ServeCommandTests.run(["serve", "--db", data, "--port", "0", "--body-limit=\(size)"])
        #expect(status != 0, "\(output)")
        #expect(output.contains("not a size") || output.contains("at least 1 byte"), "\(output)")
        #expect(!output.contains("Fatal error"), "\(output)")
    }
}
