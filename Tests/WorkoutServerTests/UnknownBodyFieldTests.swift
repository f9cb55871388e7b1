import Foundation
import Testing

@testable import WorkoutServer

/// A request body with a field the API does not know (a typo, a field in the wrong place) is refused with the field's
/// path, and nothing of it is kept.
@Suite("unknown fields in request bodies", .serialized)
struct UnknownBodyFieldTests {
    @Test func anUnknownFieldInARequestBodyIsRefusedByNameAndNothingIsKept() async throws {
        let server = try await TestServer.start()
        defer { server.remove() }
        let token = try server.directory.addAthlete(name: "uma").token
        let session = UUID().uuidString
        let setup = try await server.json(
            "PUT", "/v1/sessions/\(session)", token: token, ["activityType": "running", "activitytype": "cycling"])
        #expect(setup.status == 400 && setup.errorCode == "unknown_field", "\(setup.text)")
        #expect(setup.errorMessage?.contains("'activitytype'") == true, "\(setup.text)")
        #expect(try await server.send("GET", "/v1/sessions/\(session)", token: token).status == 404, "no session was opened")

        #expect(try await server.json("PUT", "/v1/sessions/\(session)", token: token, ["activityType": "running"]).status == 201)
        var batch = heartRateBatch(seq: 1, start: Date(), count: 3, startSession: true)
        var items = try #require(batch["items"] as? [[String: Any]])
        var samples = try #require(items[1]["samples"] as? [[String: Any]])
        samples[2]["uint"] = "count/min"  // a typo of "unit": must not be ignored
        items[1]["samples"] = samples
        batch["items"] = items
        let refused = try await server.json("POST", "/v1/sessions/\(session)/batches", token: token, batch)
        #expect(refused.status == 400 && refused.errorCode == "unknown_field", "\(refused.text)")
        #expect(refused.errorMessage?.contains("'items[1].samples[2].uint'") == true, "\(refused.text)")
        let source = ["seq": 1, "items": [["kind": "start", "at": iso(Date()), "source": ["name": "x"]]]] as [String: Any]
        let misplaced = try await server.json("POST", "/v1/sessions/\(session)/batches", token: token, source)
        #expect(misplaced.errorCode == "unknown_field" && misplaced.errorMessage?.contains("'items[0].source'") == true)
        let topLevel = try await server.json("POST", "/v1/sessions/\(session)/batches", token: token, ["seq": 1, "items": [], "ack": 1])
        #expect(topLevel.status == 400 && topLevel.errorMessage?.contains("'ack'") == true, "\(topLevel.text)")
        #expect(try await server.sessionState(session, token: token) == (0, 0), "nothing of the refused batches is kept")
        await server.stop()
    }
}
