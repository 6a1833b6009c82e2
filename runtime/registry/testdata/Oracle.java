// Cross-checks testdata/compatibility.json against Confluent's own checker
// (io.confluent.kafka.schemaregistry.CompatibilityChecker, 7.0.16, Avro 1.11.3).
// New schemas are parsed as the Confluent server parses a schema being
// registered (isNew = true: defaults validated); previous ones as stored ones.
import com.fasterxml.jackson.databind.*;
import io.confluent.kafka.schemaregistry.*;
import io.confluent.kafka.schemaregistry.avro.AvroSchema;
import java.nio.file.*;
import java.util.*;

public class Oracle {
  public static void main(String[] args) throws Exception {
    JsonNode cases = new ObjectMapper().readTree(Files.readString(Path.of(args[0])));
    int disagree = 0;
    for (JsonNode c : cases) {
      String actual;
      String detail = "";
      try {
        AvroSchema n = new AvroSchema(c.get("new").asText(), List.of(), Map.of(), null, true);
        n.validate();
        List<AvroSchema> old = new ArrayList<>();
        for (JsonNode o : c.get("old")) {
          old.add(new AvroSchema(o.asText(), List.of(), Map.of(), null, false));
        }
        CompatibilityLevel level = CompatibilityLevel.valueOf(c.get("level").asText());
        List<String> errors = CompatibilityChecker.checker(level).isCompatible(n, old);
        actual = errors.isEmpty() ? "compatible" : "incompatible";
        detail = errors.toString();
      } catch (Exception e) {
        actual = "invalid";
        detail = e.toString();
      }
      String expected = c.get("expected").asText();
      if (expected.equals(actual)) {
        System.out.println("ok    " + c.get("name").asText() + ": " + actual);
      } else {
        disagree++;
        System.out.println("DIFF  " + c.get("name").asText() + ": Confluent says " + actual
            + ", the file says " + expected + "; " + detail);
      }
    }
    System.out.println(disagree == 0 ? "every case agrees with Confluent" : disagree + " case(s) disagree");
    System.exit(disagree == 0 ? 0 : 1);
  }
}
