import io.confluent.connect.avro.AvroConverter;
import io.confluent.kafka.schemaregistry.avro.AvroSchema;
import io.confluent.kafka.schemaregistry.client.CachedSchemaRegistryClient;
import io.confluent.kafka.schemaregistry.client.rest.exceptions.RestClientException;
import org.apache.kafka.connect.data.*;
import java.math.BigDecimal;
import java.util.*;

// Drives a running `lossproof registry` with Confluent's own Java client 7.0.16
// (the AvroConverter Debezium runs in Kafka Connect, then
// CachedSchemaRegistryClient) and fails on the first unexpected answer.
// Use a fresh state directory: it expects ids 1 and 2.
public class ClientCheck {
  static void check(boolean ok, String what) { if (!ok) throw new AssertionError(what); System.out.println("ok  " + what); }
  public static void main(String[] args) throws Exception {
    String url = args[0];
    // 1. The converter Debezium uses, on a Connect struct with a decimal.
    AvroConverter converter = new AvroConverter();
    converter.configure(Map.of("schema.registry.url", url), false);
    Schema v1 = SchemaBuilder.struct().name("lp1.public.customers.Value")
        .field("id", Schema.INT32_SCHEMA)
        .field("balance", Decimal.builder(2).parameter("connect.decimal.precision", "10").optional().build())
        .build();
    Struct row = new Struct(v1).put("id", 7).put("balance", new BigDecimal("10.50"));
    byte[] bytes = converter.fromConnectData("lp1.public.customers", v1, row);
    int id = java.nio.ByteBuffer.wrap(bytes, 1, 4).getInt();
    check(bytes[0] == 0 && id > 0, "AvroConverter registered and framed with id " + id);
    var back = converter.toConnectData("lp1.public.customers", bytes);
    check(((Struct) back.value()).getInt32("id") == 7, "AvroConverter read it back: " + back.value() + " schema version " + back.schema().version());
    // numeric(10,2) -> numeric(12,2): accepted, as by Confluent.
    Schema v2 = SchemaBuilder.struct().name("lp1.public.customers.Value")
        .field("id", Schema.INT32_SCHEMA)
        .field("balance", Decimal.builder(2).parameter("connect.decimal.precision", "12").optional().build())
        .build();
    byte[] bytes2 = converter.fromConnectData("lp1.public.customers", v2, new Struct(v2).put("id", 8).put("balance", new BigDecimal("1234567890.12")));
    int id2 = java.nio.ByteBuffer.wrap(bytes2, 1, 4).getInt();
    check(id2 != id, "decimal precision change registered as a new id " + id2);
    // A fresh converter (a consumer) decodes both by id.
    AvroConverter reader = new AvroConverter();
    reader.configure(Map.of("schema.registry.url", url), false);
    check(((Struct) reader.toConnectData("lp1.public.customers", bytes).value()).getInt32("id") == 7, "fresh converter decodes v1 by id");
    check(((Struct) reader.toConnectData("lp1.public.customers", bytes2).value()).getInt32("id") == 8, "fresh converter decodes v2 by id");
    // A required column without a default: the converter's registration fails with 409.
    Schema bad = SchemaBuilder.struct().name("lp1.public.customers.Value")
        .field("id", Schema.INT32_SCHEMA).field("email", Schema.STRING_SCHEMA).build();
    try {
      converter.fromConnectData("lp1.public.customers", bad, new Struct(bad).put("id", 9).put("email", "x"));
      check(false, "incompatible schema must fail");
    } catch (org.apache.kafka.connect.errors.DataException e) {
      Throwable c = e; while (c != null && !(c instanceof RestClientException)) c = c.getCause();
      check(c != null && ((RestClientException) c).getStatus() == 409 && ((RestClientException) c).getErrorCode() == 409, "incompatible registration: " + (c == null ? e : c.getMessage()));
    }
    // 2. The client API directly.
    CachedSchemaRegistryClient client = new CachedSchemaRegistryClient(url, 100);
    check(client.getAllSubjects().contains("lp1.public.customers-value"), "getAllSubjects " + client.getAllSubjects());
    var meta = client.getLatestSchemaMetadata("lp1.public.customers-value");
    check(meta.getVersion() == 2 && meta.getId() == id2, "getLatestSchemaMetadata v" + meta.getVersion() + " id " + meta.getId());
    AvroSchema s1 = (AvroSchema) client.getSchemaById(id);
    check(client.getVersion("lp1.public.customers-value", s1) == 1, "getVersion by schema");
    check(client.getId("lp1.public.customers-value", s1) == id, "getId (lookup)");
    check(client.getAllVersions("lp1.public.customers-value").equals(List.of(1, 2)), "getAllVersions");
    check(client.testCompatibility("lp1.public.customers-value", s1), "testCompatibility");
    check(client.getSchemaMetadata("lp1.public.customers-value", 1).getId() == id, "getSchemaMetadata v1");
    check(client.updateCompatibility("lp1.public.customers-value", "FULL").equals("FULL"), "updateCompatibility");
    check(client.getCompatibility("lp1.public.customers-value").equals("FULL"), "getCompatibility");
    check(client.getCompatibility(null).equals("BACKWARD"), "global getCompatibility");
    check(client.getMode().equals("READWRITE"), "getMode");
    check(client.getAllSubjectsById(id).equals(List.of("lp1.public.customers-value")), "getAllSubjectsById");
    check(client.getAllVersionsById(id).size() == 1, "getAllVersionsById");
    try { client.getSchemaById(99999); check(false, "missing id"); }
    catch (RestClientException e) { check(e.getErrorCode() == 40403, "missing id -> 40403"); }
    check(client.deleteSubject("lp1.public.customers-value").equals(List.of(1, 2)), "deleteSubject");
    check(client.getAllSubjects().isEmpty(), "no subject left after the delete");
    check(((AvroSchema) client.getSchemaById(id)).canonicalString().equals(s1.canonicalString()), "soft-deleted schema still readable by id");
    System.out.println("all client checks passed");
  }
}
