// One role's identity: the app runs as it (DefaultAzureCredential picks it up through
// AZURE_CLIENT_ID) and KEDA reads queue depths as it.
param name string
param location string
param tags object

resource identity 'Microsoft.ManagedIdentity/userAssignedIdentities@2024-11-30' = {
  name: name
  location: location
  tags: tags
}

output id string = identity.id
output name string = identity.name
output principalId string = identity.properties.principalId
output clientId string = identity.properties.clientId
