import Foundation
import Testing
import WorkoutFormats

@testable import WorkoutServer

/// A live session's times are bounded: no event, sample or session longer than 7 days, no instant more than
/// 10 minutes after the server's clock, numbers finite and in range. A refused batch keeps nothing and the
/// session still ends and is saved (a lap of 1e308 s used to leave a session that could never end).
@Suite("live session time bounds")
struct LiveSessionTimeBoundsTests {
    static func open(_ server: TestServer, token: String) async throws -> String {
        let session = UUID().uuidString
        let opened = try await server.json("PUT", "/v1/sessions/\(session)", token: token, ["activityType": "running"])
        #expect(opened.status == 201, "\(opened.text)")
        return session
    }

    @Test("a 1e308 lap and a sample ten years ahead are refused with 422; the session ends and is saved")
    func refusedAndTheSessionStillFinishes() async throws {
        let server = try await TestServer.start()
        defer { server.remove() }
        let token = try server.directory.addAthlete(name: "ida").token
        let session = try await Self.open(server, token: token)
        let path = "/v1/sessions/\(session)/batches"
        let start = Date().addingTimeInterval(-120)
        let first = try await server.json("POST", path, token: token, heartRateBatch(seq: 1, start: start, count: 5, startSession: true))
        #expect(first.status == 200, "\(first.text)")

        let lap = ["seq": 2, "items": [["kind": "events", "events": [["type": "lap", "start": iso(start.addingTimeInterval(10)), "duration": 1e308]]]]] as [String: Any]
        let refusedLap = try await server.json("POST", path, token: token, lap)
        #expect(refusedLap.status == 422 && refusedLap.errorCode == "invalid_event", "\(refusedLap.text)")
        let weekAndASecond = ["seq": 2, "items": [["kind": "events", "events": [["type": "lap", "start": iso(start), "duration": 7 * 86_400 + 1]]]]] as [String: Any]
        #expect(try await server.json("POST", path, token: token, weekAndASecond).errorCode == "invalid_event")

        let tenYears = Date().addingTimeInterval(10 * 365 * 86_400)
        let ahead = heartRateBatch(seq: 2, start: tenYears, count: 1)
        let refusedAhead = try await server.json("POST", path, token: token, ahead)
        #expect(refusedAhead.status == 422 && refusedAhead.errorCode == "date_in_future", "\(refusedAhead.text)")
        let elevenMinutes = heartRateBatch(seq: 2, start: Date().addingTimeInterval(11 * 60), count: 1)
        #expect(try await server.json("POST", path, token: token, elevenMinutes).errorCode == "date_in_future")
        let endAhead = ["seq": 2, "items": [["kind": "end", "at": iso(tenYears)]]] as [String: Any]
        #expect(try await server.json("POST", path, token: token, endAhead).errorCode == "date_in_future")

        // Nothing of the refused batches is kept: batch 2 is still the next one, and the session ends and saves.
        let end = ["seq": 2, "items": [["kind": "end", "at": iso(start.addingTimeInterval(30))]]] as [String: Any]
        let ended = try await server.json("POST", path, token: token, end)
        #expect(ended.status == 200 && ended.json["ack"] as? Int == 2, "\(ended.text)")
        let finished = try await server.send("POST", "/v1/sessions/\(session)/finish", token: token)
        #expect(finished.status == 200, "\(finished.text)")
        let workout = finished.json["workout"] as? [String: Any]
        let duration = try #require(workout?["duration"] as? Double)
        #expect(duration > 0 && duration <= 31, "the workout lasts what was recorded: \(duration)")
        await server.stop()
    }

    @Test("a session from 2000 to 9999 is refused: the year 9999 with 400, a session longer than 7 days with 422")
    func aSessionSpanningCenturies() async throws {
        let server = try await TestServer.start()
        defer { server.remove() }
        let token = try server.directory.addAthlete(name: "jon").token
        let session = try await Self.open(server, token: token)
        let path = "/v1/sessions/\(session)/batches"
        let y2000 = try #require(Wire.parseDate("2000-01-01T00:00:00Z"))
        let started = try await server.json("POST", path, token: token, heartRateBatch(seq: 1, start: y2000, count: 2, startSession: true))
        #expect(started.status == 200, "\(started.text)")
        let toYear9999 = ["seq": 2, "items": [["kind": "end", "at": "9999-12-31T00:00:00Z"]]] as [String: Any]
        let refused9999 = try await server.json("POST", path, token: token, toYear9999)
        #expect(refused9999.status == 400 && refused9999.errorCode == "invalid_json", "\(refused9999.text)")
        let toNow = ["seq": 2, "items": [["kind": "end", "at": iso(Date())]]] as [String: Any]
        let refusedLong = try await server.json("POST", path, token: token, toNow)
        #expect(refusedLong.status == 422 && refusedLong.errorCode == "session_too_long", "\(refusedLong.text)")
        // Samples eight days after the start, in one batch with the start: refused too.
        let other = try await Self.open(server, token: token)
        var batch = heartRateBatch(seq: 1, start: y2000, count: 1, startSession: true)
        var items = try #require(batch["items"] as? [[String: Any]])
        items.append(["kind": "samples", "samples": [["type": "heartRate", "value": 120, "start": iso(y2000.addingTimeInterval(8 * 86_400))]]])
        batch["items"] = items
        let refusedBatch = try await server.json("POST", "/v1/sessions/\(other)/batches", token: token, batch)
        #expect(refusedBatch.status == 422 && refusedBatch.errorCode == "session_too_long", "\(refusedBatch.text)")
        // Within a week: ends and saves.
        let end = ["seq": 2, "items": [["kind": "end", "at": iso(y2000.addingTimeInterval(3_600))]]] as [String: Any]
        #expect(try await server.json("POST", path, token: token, end).status == 200)
        #expect(try await server.send("POST", "/v1/sessions/\(session)/finish", token: token).status == 200)
        await server.stop()
    }

    @Test("numbers out of range are refused: 1e400 and NaN are not JSON numbers (400), a heart rate of 1e308 is 422")
    func numbers() async throws {
        let server = try await TestServer.start()
        defer { server.remove() }
        let token = try server.directory.addAthlete(name: "kim").token
        let session = try await Self.open(server, token: token)
        let path = "/v1/sessions/\(session)/batches"
        let start = iso(Date().addingTimeInterval(-60))
        for value in ["1e400", "NaN", "Infinity", "-1e400"] {
            let body = #"{"seq": 1, "items": [{"kind": "start", "at": "\#(start)"}, {"kind": "samples", "samples": [{"type": "heartRate", "value": \#(value), "start": "\#(start)"}]}]}"#
            let answer = try await server.send("POST", path, token: token, body: Data(body.utf8), contentType: "application/json")
            #expect(answer.status == 400 && answer.errorCode == "invalid_json", "\(value): \(answer.text)")
        }
        let huge = ["seq": 1, "items": [["kind": "start", "at": start], ["kind": "samples", "samples": [["type": "heartRate", "value": 1e308, "start": start]]]]] as [String: Any]
        let refused = try await server.json("POST", path, token: token, huge)
        #expect(refused.status == 422 && refused.errorCode == "invalid_sample", "\(refused.text)")
        for length in [0, -25, 1e7, 1e308] {
            let pool = try await server.json(
                "PUT", "/v1/sessions/\(UUID())", token: token,
                ["activityType": "swimming", "swimmingLocationType": "pool", "lapLengthMeters": length])
            #expect(pool.status == 422 && pool.errorCode == "invalid_lap_length", "\(length): \(pool.text)")
        }
        let seq = #"{"seq": 1e300, "items": []}"#
        let refusedSeq = try await server.send("POST", path, token: token, body: Data(seq.utf8), contentType: "application/json")
        #expect(refusedSeq.status == 400 && refusedSeq.errorCode == "invalid_json", "\(refusedSeq.text)")
        await server.stop()
    }

    /// A FIT file with heart-rate records at the given FIT times (seconds since 1989-12-31T00:00:00Z).
    static func fit(recordsAt times: [UInt32]) -> Data {
        var writer = FITWriter()
        writer.write(0, [.enumeration(0, 4), .uint16(1, 255), .uint16(2, 1), .uint32z(3, 7), .uint32(4, times[0])])
        let (first, last) = (times[0], times[times.count - 1])
        writer.write(21, [.uint32(253, first), .enumeration(0, 0), .enumeration(1, 0), .uint32(3, 0)])
        for (index, time) in times.enumerated() { writer.write(20, [.uint32(253, time), .uint8(3, UInt8(120 + index))]) }
        writer.write(21, [.uint32(253, last), .enumeration(0, 0), .enumeration(1, 4), .uint32(3, 0)])
        let seconds = Double(last - first)
        writer.write(
            18,
            [
                .uint32(253, last), .uint32(2, first), .enumeration(5, 1), .scaled(7, seconds, scale: 1000, size: 4),
                .scaled(8, seconds, scale: 1000, size: 4),
            ])
        return Data(writer.finish())
    }

    @Test("a FIT upload spanning 136 years, or ending years ahead, is refused with 422; a normal one is taken")
    func uploadsAreBoundedInTime() async throws {
        let server = try await TestServer.start()
        defer { server.remove() }
        let token = try server.directory.addAthlete(name: "lou").token
        let fitEpoch = Date(timeIntervalSince1970: 631_065_600)
        let now = UInt32(Date().timeIntervalSince(fitEpoch))
        let centuries = try await server.send("POST", "/v1/workouts", token: token, body: Self.fit(recordsAt: [100, 101, 4_290_000_000]))
        #expect(centuries.status == 422 && centuries.errorCode == "invalid_fit", "\(centuries.text)")
        #expect(centuries.errorMessage?.contains("longer than") == true, "\(centuries.text)")
        let ahead = now + 3 * 365 * 86_400
        let future = try await server.send("POST", "/v1/workouts", token: token, body: Self.fit(recordsAt: [ahead, ahead + 1, ahead + 60]))
        #expect(future.status == 422 && future.errorCode == "invalid_fit", "\(future.text)")
        let hourAgo = now - 3_600
        let normal = try await server.send("POST", "/v1/workouts", token: token, body: Self.fit(recordsAt: [hourAgo, hourAgo + 1, hourAgo + 60]))
        #expect(normal.status == 201, "\(normal.text)")
        await server.stop()
    }
}
